# Sourced by the scripts of the high-availability set-up (scripts/ha/*.sh):
# where everything lives, which ports, and how to run PostgreSQL's tools.
#
# The set-up, all on loopback:
#   monitor  127.0.0.1:25401  pg_auto_failover's monitor (witness and orchestrator)
#   node1    127.0.0.1:25402  a data node (primary or synchronous standby)
#   node2    127.0.0.1:25403  the other data node
#   HAProxy  127.0.0.1:25400  the stable endpoint: always the current primary
#   stats    127.0.0.1:25405  HAProxy's status page
#   restore  127.0.0.1:25404  a point-in-time restore (scripts/ha/restore.sh)
# The ports sit below Linux's ephemeral range (32768-60999): a port in it
# can be taken at random as the local end of any outgoing connection (a
# keeper's to the monitor, say), and the node bound next then finds it
# in use. (The test clusters listen on unix sockets only.) Everything is
# kept under target/ha/: data dirs, WAL archive, base backups, logs, secrets.
#
# Run as root, PostgreSQL runs as the `postgres` system user (it refuses
# root), as the private cluster does (server/src/pgcluster.rs); if that user
# cannot reach target/ha (a checkout in a 0700 home), the data lives in
# /var/lib/frontrow/ha-<hash of the path> instead (`scripts/ha/status.sh`
# says where).

HA_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HA_DIR=${FRONTROW_HA_DIR:-$HA_REPO/target/ha}
HA_HOST=127.0.0.1
HA_PROXY_PORT=${FRONTROW_HA_PORT:-25400}
HA_MONITOR_PORT=$((HA_PROXY_PORT + 1))
HA_NODE1_PORT=$((HA_PROXY_PORT + 2))
HA_NODE2_PORT=$((HA_PROXY_PORT + 3))
HA_RESTORE_PORT=$((HA_PROXY_PORT + 4))
HA_STATS_PORT=$((HA_PROXY_PORT + 5))
HA_NODES=(node1 node2)
HA_FORMATION=default
HA_DATABASE=frontrow
HA_APP_USER=frontrow
HA_CHECK_USER=haproxy_check

# Failure detection, tuned for one machine's loopback (pg_auto_failover's
# defaults are for real networks: 20 s to call a node unhealthy, 30 s
# before promoting over a primary that may still be alive). The order
# matters: an isolated primary demotes itself after the network-partition
# timeout, which must pass before the monitor's demote timeout promotes
# the standby, so two primaries never take writes at once.
HA_HEALTH_CHECK_MS=${FRONTROW_HA_HEALTH_CHECK_MS:-1000}
HA_UNHEALTHY_MS=${FRONTROW_HA_UNHEALTHY_MS:-3000}
HA_PARTITION_S=${FRONTROW_HA_PARTITION_S:-4}
HA_DEMOTE_MS=${FRONTROW_HA_DEMOTE_MS:-6000}

ha_log() { echo "ha: $*" >&2; }
ha_die() {
  echo "ha: error: $*" >&2
  # What the daemons said last, so that a failure far away (in CI) can be read.
  local log
  for log in "${HA_LOGS:-/nonexistent}"/*.log "${HA_PG:-/nonexistent}"/*/startup.log; do
    [ -f "$log" ] || continue
    echo "ha: --- the last lines of $log" >&2
    tail -n 25 "$log" >&2
  done
  exit 1
}

# PostgreSQL's binaries: the major version pg_auto_failover's extension is
# built for (Debian's postgresql-NN-auto-failover).
ha_pg_bin() {
  local so
  so=$(ls -d /usr/lib/postgresql/*/lib/pgautofailover.so 2>/dev/null | sort -V | tail -n1)
  [ -n "$so" ] || ha_die "pg_auto_failover is not installed (scripts/setup.sh installs postgresql-15-auto-failover and pg-auto-failover-cli)"
  echo "$(dirname "$(dirname "$so")")/bin"
}

ha_init() {
  command -v pg_autoctl >/dev/null 2>&1 || ha_die "pg_autoctl not found: run scripts/setup.sh"
  # (Debian puts HAProxy in /usr/sbin, which a user's PATH may lack.)
  HA_HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
  [ -x "$HA_HAPROXY" ] || ha_die "haproxy not found: run scripts/setup.sh"
  HA_PGBIN=$(ha_pg_bin)
  mkdir -p "$HA_DIR"
  chmod 0755 "$HA_DIR"
  if [ "$(id -u)" -eq 0 ]; then
    HA_RUN_AS=postgres
    getent passwd postgres >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    if runuser -u postgres -- test -x "$HA_DIR"; then
      HA_PG=$HA_DIR/pg
    else
      install -d -m 0755 -o root -g root /var/lib/frontrow
      HA_PG=/var/lib/frontrow/ha-$(printf %s "$HA_DIR" | sha256sum | cut -c1-16)
    fi
    [ -L "$HA_PG" ] && ha_die "$HA_PG is a link: refusing to use it"
    install -d -m 0700 -o postgres -g "$(id -gn postgres)" "$HA_PG"
  else
    HA_RUN_AS=""
    HA_PG=$HA_DIR/pg
    install -d -m 0700 "$HA_PG"
  fi
  HA_SOCK=$HA_PG/sock
  [ ${#HA_SOCK} -le 80 ] || ha_die "$HA_SOCK is too long for a unix socket's path: set FRONTROW_HA_DIR to a shorter place"
  HA_SECRET=$HA_PG/secret
  HA_PGPASS=$HA_PG/pgpass
  HA_ARCHIVE=$HA_PG/wal-archive
  HA_BACKUPS=$HA_PG/backups
  HA_LOGS=$HA_DIR/logs
  mkdir -p "$HA_LOGS"
}

# Runs a command as the user PostgreSQL runs as, with the environment the
# set-up's tools need: no unix sockets (every connection is TCP to
# 127.0.0.1, by password from the password file), pg_autoctl's config,
# state and pid files under the data root (never ~/.config or /tmp).
ha_pg_argv() {
  HA_ARGV=()
  [ -n "$HA_RUN_AS" ] && HA_ARGV=(runuser -u "$HA_RUN_AS" --)
  HA_ARGV+=(env
    PATH="$HA_PGBIN:/usr/bin:/bin"
    HOME="$HA_PG"
    LANG=C.UTF-8
    XDG_CONFIG_HOME="$HA_PG/config"
    XDG_DATA_HOME="$HA_PG/share"
    XDG_RUNTIME_DIR="$HA_PG/run"
    TMPDIR="$HA_PG/tmp"
    PGHOST="$HA_HOST"
    PGUSER=postgres
    PGPASSFILE="$HA_PGPASS"
    PGCONNECT_TIMEOUT=3
  )
}
ha_as_pg() {
  ha_pg_argv
  "${HA_ARGV[@]}" "$@"
}

# psql as the superuser: ha_psql PORT DATABASE SQL (or the SQL on stdin
# when none is given: statements with passwords never go on a command line).
ha_psql() {
  if [ $# -ge 3 ]; then
    ha_as_pg psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$HA_HOST" -p "$1" -U postgres -d "$2" -c "$3"
  else
    ha_as_pg psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$HA_HOST" -p "$1" -U postgres -d "$2"
  fi
}

# Generated once: the password of the superuser and of pg_auto_failover's
# roles, and the application's (kept apart). Files of mode 0600.
ha_secrets() {
  if [ ! -s "$HA_SECRET" ]; then
    ha_as_pg sh -c "umask 077; mkdir -p '$HA_PG/tmp' '$HA_PG/run' '$HA_SOCK'; od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > '$HA_SECRET'; echo >> '$HA_SECRET'"
  fi
  if [ ! -s "$HA_PG/app-secret" ]; then
    ha_as_pg sh -c "umask 077; od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > '$HA_PG/app-secret'"
  fi
  local secret app
  secret=$(cat "$HA_SECRET")
  app=$(cat "$HA_PG/app-secret")
  # (A password file names a unix socket by its directory.)
  ha_as_pg sh -c "umask 077; printf '%s\n' '$HA_HOST:*:*:$HA_APP_USER:$app' '$HA_HOST:*:*:*:$secret' '$HA_SOCK:*:*:*:$secret' > '$HA_PGPASS'"
}

# The application's URL: through HAProxy (or another port: ha_app_url PORT).
ha_app_url() {
  local port=${1:-$HA_PROXY_PORT}
  echo "postgres://$HA_APP_USER:$(cat "$HA_PG/app-secret")@$HA_HOST:$port/$HA_DATABASE"
}

# Data dir and port of a node.
ha_pgdata() { echo "$HA_PG/$1"; }
ha_port() {
  case "$1" in
    monitor) echo "$HA_MONITOR_PORT" ;;
    node1) echo "$HA_NODE1_PORT" ;;
    node2) echo "$HA_NODE2_PORT" ;;
    restore) echo "$HA_RESTORE_PORT" ;;
    *) ha_die "unknown node $1" ;;
  esac
}

ha_monitor_uri() { echo "postgres://autoctl_node@$HA_HOST:$HA_MONITOR_PORT/pg_auto_failover?sslmode=disable"; }

# The pid of a node's pg_autoctl (the supervisor of its PostgreSQL), if running.
ha_keeper_pid() {
  local pgdata pidfile pid
  pgdata=$(ha_pgdata "$1")
  pidfile="$HA_PG/run/pg_autoctl$pgdata/pg_autoctl.pid"
  [ -f "$pidfile" ] || return 1
  pid=$(head -n1 "$pidfile")
  ha_alive "$pid" pg_autoctl && echo "$pid"
}

# Is `pid` a live process of program `name`? (A pid file left by a killed
# process may name a pid now reused by something else.)
# A zombie (dead, not yet reaped) is not alive.
ha_alive() {
  [ -n "$1" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] \
    && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# The postmaster's pid of a data dir, if running.
ha_postmaster_pid() {
  local pidfile=$1/postmaster.pid pid
  [ -f "$pidfile" ] || return 1
  pid=$(head -n1 "$pidfile")
  ha_alive "$pid" postgres && echo "$pid"
}

# A process and all its descendants.
ha_tree() {
  local pid=$1 child
  echo "$pid"
  for child in $(pgrep -P "$pid" 2>/dev/null); do ha_tree "$child"; done
}

# The node that is primary now, as the monitor sees it (empty if none).
ha_primary() {
  ha_psql "$HA_MONITOR_PORT" pg_auto_failover \
    "SELECT nodename FROM pgautofailover.node WHERE goalstate IN ('primary', 'wait_primary', 'single', 'apply_settings', 'join_primary') AND reportedstate = goalstate ORDER BY nodeid LIMIT 1" 2>/dev/null || true
}

# Waits until the monitor reports `want` (a regex over "name:state" lines,
# one per node), for up to `secs` seconds.
ha_wait_states() {
  local want=$1 secs=$2 deadline states
  deadline=$((SECONDS + secs))
  while :; do
    states=$(ha_psql "$HA_MONITOR_PORT" pg_auto_failover \
      "SELECT string_agg(nodename || ':' || reportedstate || '/' || goalstate, ' ' ORDER BY nodename) FROM pgautofailover.node" 2>/dev/null || true)
    if [[ "$states" =~ $want ]]; then
      return 0
    fi
    if [ $SECONDS -ge $deadline ]; then
      ha_log "timed out waiting for $want (states: ${states:-monitor unreachable})"
      return 1
    fi
    sleep 0.5
  done
}

# Seconds since `start` (a `date +%s.%N`), to a tenth.
ha_now() { date +%s.%N; }
ha_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }

# Closes every file descriptor above 2 that this script inherited, so the
# daemons it starts keep none open: a lock its caller holds (flock on a
# build lock, say) would otherwise be held as long as PostgreSQL runs.
ha_close_inherited_fds() {
  local fd
  for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}
