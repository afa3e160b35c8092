#!/usr/bin/env bash
# Stops everything the high-availability set-up runs: HAProxy, the
# point-in-time restore (if one is up), pg_auto_failover's monitor and both
# data nodes with their PostgreSQL. Anything that will not stop within
# seconds is killed. `--purge` then deletes it all (data, archive, backups).
set -euo pipefail
source "$(dirname "$0")/common.sh"
ha_init

purge=no
[ "${1:-}" = --purge ] && purge=yes

stop_pid() {
  local pid=$1 name=$2 deadline=$((SECONDS + ${3:-10}))
  kill -TERM "$pid" 2>/dev/null || return 0
  while ha_alive "$pid" "$name"; do
    if [ $SECONDS -ge $deadline ]; then
      kill -KILL "$pid" 2>/dev/null || true
      return 0
    fi
    sleep 0.1
  done
}

if [ -f "$HA_DIR/haproxy.pid" ]; then
  for pid in $(cat "$HA_DIR/haproxy.pid"); do
    ha_alive "$pid" haproxy && stop_pid "$pid" haproxy 5
  done
  rm -f "$HA_DIR/haproxy.pid"
fi

if ha_postmaster_pid "$HA_PG/restore" >/dev/null; then
  ha_as_pg pg_ctl -D "$HA_PG/restore" stop -m fast -w -t 20 >/dev/null 2>&1 || true
fi

# The monitor first (nothing is failed over while the nodes stop), then the
# standby before the primary.
order=(monitor)
primary=$(ha_primary)
for name in "${HA_NODES[@]}"; do [ "$name" != "$primary" ] && order+=("$name"); done
[ -n "$primary" ] && order+=("$primary")
for name in "${order[@]}"; do
  if pid=$(ha_keeper_pid "$name"); then
    ha_log "stopping $name"
    ha_as_pg pg_autoctl stop --pgdata "$(ha_pgdata "$name")" --fast >/dev/null 2>&1 || true
    deadline=$((SECONDS + 20))
    while ha_alive "$pid" pg_autoctl && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    if ha_alive "$pid" pg_autoctl; then
      ha_log "$name did not stop: killed"
      kill -KILL $(ha_tree "$pid") 2>/dev/null || true
    fi
  fi
done
# A PostgreSQL left without its supervisor (its pg_autoctl was killed).
for name in monitor "${HA_NODES[@]}"; do
  if pid=$(ha_postmaster_pid "$(ha_pgdata "$name")"); then
    ha_log "stopping the PostgreSQL of $name"
    ha_as_pg pg_ctl -D "$(ha_pgdata "$name")" stop -m immediate -w -t 10 >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null || true
  fi
done

if [ "$purge" = yes ]; then
  ha_log "deleting $HA_PG and $HA_DIR"
  rm -rf "$HA_PG" "$HA_DIR"
fi
ha_log "down"
