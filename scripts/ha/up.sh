#!/usr/bin/env bash
# Brings up the high-availability set-up on loopback (see common.sh): a
# pg_auto_failover monitor, a primary and its synchronous standby, WAL
# archived from both to target/ha, and HAProxy in front as the one address
# the application uses. Creates what is missing, starts what is stopped:
# safe to re-run (a node that was killed comes back and rejoins as a
# standby). `scripts/ha/down.sh` stops it all; `--purge` also deletes it.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ha_close_inherited_fds
ha_init
ha_secrets
started=$SECONDS

# pg_auto_failover is the supervisor: `pg_autoctl run` starts PostgreSQL,
# reports to the monitor and applies the state it is assigned.
start_keeper() {
  local name=$1 pgdata
  pgdata=$(ha_pgdata "$name")
  if ha_keeper_pid "$name" >/dev/null; then
    return 0
  fi
  ha_log "starting $name"
  ha_pg_argv
  setsid -f "${HA_ARGV[@]}" pg_autoctl run --pgdata "$pgdata" >>"$HA_LOGS/$name.log" 2>&1 </dev/null
  local deadline=$((SECONDS + 30))
  until ha_keeper_pid "$name" >/dev/null; do
    [ $SECONDS -lt $deadline ] || ha_die "$name did not start: see $HA_LOGS/$name.log"
    sleep 0.2
  done
}

wait_for_port() {
  local port=$1 deadline=$((SECONDS + 60))
  until ha_as_pg pg_isready -q -h "$HA_HOST" -p "$port"; do
    [ $SECONDS -lt $deadline ] || ha_die "nothing answers on $HA_HOST:$port"
    sleep 0.2
  done
}

# A node is created once; one whose creation was cut short is not mended.
created() {
  [ -f "$HA_PG/created-$1" ] && return 0
  [ -f "$HA_PG/config/pg_autoctl$(ha_pgdata "$1")/pg_autoctl.cfg" ] \
    && ha_die "the creation of $1 was interrupted: scripts/ha/down.sh --purge, then scripts/ha/up.sh"
  return 1
}
mark_created() { ha_as_pg touch "$HA_PG/created-$1"; }

# A data dir made by us rather than by pg_autoctl: scram passwords only,
# TCP on 127.0.0.1 only, checksums. The unix socket is in a directory only
# PostgreSQL's user can enter (pg_autoctl starts PostgreSQL without TCP for
# the crash recovery before a pg_rewind, and it needs some socket).
initdb_node() {
  local name=$1 pgdata
  pgdata=$(ha_pgdata "$name")
  [ -f "$pgdata/PG_VERSION" ] && return 0
  ha_as_pg initdb -D "$pgdata" -U postgres --auth=scram-sha-256 --pwfile="$HA_SECRET" \
    -E UTF8 --locale=C.UTF-8 --data-checksums >/dev/null
  ha_as_pg tee -a "$pgdata/postgresql.conf" >/dev/null <<EOF

# frontrow high-availability set-up (scripts/ha)
listen_addresses = '$HA_HOST'
unix_socket_directories = '$HA_SOCK'
port = $(ha_port "$name")
EOF
}

# --- the monitor ------------------------------------------------------------
if ! created monitor; then
  rm -rf "$(ha_pgdata monitor)"
  initdb_node monitor
  ha_as_pg tee -a "$(ha_pgdata monitor)/postgresql.conf" >/dev/null <<EOF
pgautofailover.health_check_period = $HA_HEALTH_CHECK_MS
pgautofailover.health_check_timeout = $HA_HEALTH_CHECK_MS
pgautofailover.health_check_retry_delay = $((HA_HEALTH_CHECK_MS / 2))
pgautofailover.health_check_max_retries = 1
pgautofailover.node_considered_unhealthy_timeout = $HA_UNHEALTHY_MS
pgautofailover.primary_demote_timeout = $HA_DEMOTE_MS
EOF
  ha_as_pg tee "$(ha_pgdata monitor)/pg_hba.conf" >/dev/null <<EOF
# frontrow high-availability set-up: TCP on loopback only, by password.
local all all scram-sha-256
host all all $HA_HOST/32 scram-sha-256
EOF
  ha_log "creating the monitor on $HA_HOST:$HA_MONITOR_PORT"
  ha_as_pg pg_autoctl create monitor --pgdata "$(ha_pgdata monitor)" --pgport "$HA_MONITOR_PORT" \
    --listen "$HA_HOST" --hostname "$HA_HOST" --auth scram-sha-256 --no-ssl >>"$HA_LOGS/monitor.log" 2>&1 \
    || ha_die "creating the monitor failed: see $HA_LOGS/monitor.log"
  start_keeper monitor
  wait_for_port "$HA_MONITOR_PORT"
  ha_psql "$HA_MONITOR_PORT" postgres <<<"ALTER ROLE autoctl_node PASSWORD '$(cat "$HA_SECRET")';"
  mark_created monitor
fi
start_keeper monitor
wait_for_port "$HA_MONITOR_PORT"

# --- the data nodes ---------------------------------------------------------
create_node() {
  local name=$1 pgdata port
  pgdata=$(ha_pgdata "$name")
  port=$(ha_port "$name")
  ha_log "creating $name on $HA_HOST:$port"
  ha_as_pg pg_autoctl create postgres --pgdata "$pgdata" --pgport "$port" --pghost "$HA_HOST" \
    --listen "$HA_HOST" --hostname "$HA_HOST" --name "$name" --username postgres --dbname "$HA_DATABASE" \
    --monitor "$(ha_monitor_uri)" --auth scram-sha-256 --no-ssl >>"$HA_LOGS/$name.log" 2>&1 \
    || ha_die "creating $name failed: see $HA_LOGS/$name.log"
  ha_as_pg pg_autoctl config set --pgdata "$pgdata" timeout.network_partition_timeout "$HA_PARTITION_S" >/dev/null
}

if ! created node1; then
  rm -rf "$(ha_pgdata node1)"
  ha_as_pg mkdir -p "$HA_ARCHIVE" "$HA_BACKUPS"
  initdb_node node1
  # Every WAL segment is archived, by the primary and by the standby as it
  # receives it (archive_mode = always): a segment the primary completed
  # but had not archived when it died is archived by the standby. Both
  # nodes write the same names, so a segment already there with the same
  # bytes counts as archived; one with other bytes is an error.
  ha_as_pg tee -a "$(ha_pgdata node1)/postgresql.conf" >/dev/null <<EOF
max_connections = 200
archive_mode = always
archive_command = 'f=$HA_ARCHIVE/%f; if [ -f "\$f" ]; then cmp -s "%p" "\$f"; else cp "%p" "\$f.\$\$" && sync "\$f.\$\$" && mv "\$f.\$\$" "\$f"; fi'
archive_timeout = 60
EOF
  ha_as_pg tee "$(ha_pgdata node1)/pg_hba.conf" >/dev/null <<EOF
# frontrow high-availability set-up: TCP on loopback only, by password,
# except HAProxy's health check, whose role can only ask whether the node
# is the primary (pg_is_in_recovery) of the postgres database.
host postgres $HA_CHECK_USER $HA_HOST/32 trust
local all all scram-sha-256
host all all $HA_HOST/32 scram-sha-256
host replication all $HA_HOST/32 scram-sha-256
EOF
  create_node node1
  start_keeper node1
  ha_wait_states "node1:single/single" 60 || ha_die "node1 did not become the primary: see $HA_LOGS/node1.log"
  wait_for_port "$HA_NODE1_PORT"
  # The roles: pg_auto_failover's replication role gets its password (the
  # standby's base backup needs it), the application its own role and
  # database, HAProxy's check a role that can do nothing else.
  ha_psql "$HA_NODE1_PORT" postgres <<EOF
ALTER ROLE pgautofailover_replicator PASSWORD '$(cat "$HA_SECRET")';
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$HA_APP_USER') THEN CREATE ROLE $HA_APP_USER LOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$HA_CHECK_USER') THEN CREATE ROLE $HA_CHECK_USER LOGIN CONNECTION LIMIT 8; END IF;
END \$\$;
ALTER ROLE $HA_APP_USER PASSWORD '$(cat "$HA_PG/app-secret")';
ALTER DATABASE $HA_DATABASE OWNER TO $HA_APP_USER;
EOF
  mark_created node1
fi
start_keeper node1

if ! created node2; then
  rm -rf "$(ha_pgdata node2)"
  create_node node2
  mark_created node2
fi
start_keeper node2

# Both data nodes healthy: one primary, one secondary (in sync).
ha_wait_states "^node1:(primary/primary|secondary/secondary) node2:(primary/primary|secondary/secondary)$" 120 \
  || ha_die "the data nodes did not settle: see $HA_LOGS/"
primary=$(ha_primary)
sync_names=$(ha_psql "$(ha_port "$primary")" postgres "SHOW synchronous_standby_names")
[ -n "$sync_names" ] || ha_die "the primary does not wait for its standby (synchronous_standby_names is empty)"

# --- HAProxy ----------------------------------------------------------------
# The health check speaks PostgreSQL's protocol itself (tcp-check): it
# signs in as the check role, asks whether the node is read-only and passes
# only on the answer 'f'. In HAProxy's own process, every half second, with
# no script forked per check (external-check would need
# `insecure-fork-wanted` and a psql per node and check) and no password to
# keep. A standby answers 't' (in recovery) and stays down; so does a
# standby pg_auto_failover has promoted but keeps read-only
# (default_transaction_read_only) until the old primary is surely demoted:
# asking only pg_is_in_recovery() would send writes there for seconds, to
# be refused with 25006. A node that is down, starting
# or shutting down refuses the connection or the sign-in and is marked down
# at once, and `on-marked-down shutdown-sessions` cuts the connections
# still open to it, so the application's pool reconnects (through us, to
# the new primary) instead of waiting on a dead peer.
#
# `stick on dst` with a one-entry table keeps every connection on the
# primary chosen first until it fails, and never moves back by itself: an
# old primary restarted after a failover may run as a primary for the
# moment before pg_autoctl hears from the monitor and demotes it (its
# commits wait for a standby that no longer follows it, so none is
# acknowledged); connections stay on the new one meanwhile.
hex() { printf %s "$1" | od -An -tx1 | tr -d ' \n'; }
startup_body="$(hex user)00$(hex "$HA_CHECK_USER")00$(hex database)00$(hex postgres)0000"
startup=$(printf '%08x00030000%s' $(( ${#startup_body} / 2 + 8 )) "$startup_body")
check_sql="SELECT pg_is_in_recovery() OR current_setting('default_transaction_read_only')::boolean"
query_body="$(hex "$check_sql")00"
query=$(printf '51%08x%s' $(( ${#query_body} / 2 + 4 )) "$query_body")
user_lines=""
if [ "$(id -u)" -eq 0 ] && getent passwd haproxy >/dev/null; then
  user_lines=$'    user haproxy\n    group haproxy'
fi
cat >"$HA_DIR/haproxy.cfg" <<EOF
# Written by scripts/ha/up.sh.
global
    maxconn 4000
    log stderr format iso local0 info
$user_lines

defaults
    mode tcp
    log global
    option log-health-checks
    option dontlog-normal
    timeout connect 1s
    timeout check 1s
    timeout client 2h
    timeout server 2h

listen postgres_primary
    bind $HA_HOST:$HA_PROXY_PORT
    balance first
    stick-table type ip size 1 nopurge
    stick on dst
    option tcp-check
    # StartupMessage (protocol 3.0) as $HA_CHECK_USER to database postgres
    tcp-check send-binary $startup
    # ReadyForQuery: signed in (trust, for this role only)
    tcp-check expect binary 5a0000000549
    # Query: $check_sql
    tcp-check send-binary $query
    # CommandComplete "SELECT 1": the whole answer is in
    tcp-check expect binary $(hex 'SELECT 1')
    # then its row must be the one value 'f' (neither in recovery nor read-only: the primary)
    tcp-check expect min-recv 0 binary 440000000b00010000000166
    # Terminate
    tcp-check send-binary 5800000004
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
    server node1 $HA_HOST:$HA_NODE1_PORT check
    server node2 $HA_HOST:$HA_NODE2_PORT check

listen stats
    bind $HA_HOST:$HA_STATS_PORT
    mode http
    stats enable
    stats uri /
    stats refresh 2s
EOF
"$HA_HAPROXY" -c -q -f "$HA_DIR/haproxy.cfg" || ha_die "HAProxy refuses its configuration"
haproxy_pid=$(cat "$HA_DIR/haproxy.pid" 2>/dev/null || true)
replace=()
if ha_alive "$haproxy_pid" haproxy; then
  # Reloaded in place: the new process takes the listening socket over.
  replace=(-sf "$haproxy_pid")
fi
# In the foreground (its log on stderr), in a session of its own.
setsid "$HA_HAPROXY" -f "$HA_DIR/haproxy.cfg" "${replace[@]}" >>"$HA_LOGS/haproxy.log" 2>&1 </dev/null &
echo $! >"$HA_DIR/haproxy.pid"
# Through HAProxy, the application's role reaches the primary.
deadline=$((SECONDS + 30))
until [ "$(ha_as_pg psql -X -A -t -d "$(ha_app_url)" -c 'SELECT NOT pg_is_in_recovery()' 2>/dev/null)" = t ]; do
  [ $SECONDS -lt $deadline ] || ha_die "the primary is not reachable through HAProxy on $HA_HOST:$HA_PROXY_PORT: see $HA_LOGS/haproxy.log"
  sleep 0.2
done

standby=node1
[ "$primary" = node1 ] && standby=node2
ha_log "up in $((SECONDS - started)) s: primary $primary ($HA_HOST:$(ha_port "$primary")), synchronous standby $standby ($HA_HOST:$(ha_port "$standby")) [synchronous_standby_names = $sync_names], monitor $HA_HOST:$HA_MONITOR_PORT"
ha_log "endpoint: HAProxy on $HA_HOST:$HA_PROXY_PORT (status page http://$HA_HOST:$HA_STATS_PORT/); the application's URL: DATABASE_URL=\$(scripts/ha/url.sh)"
