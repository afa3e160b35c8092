#!/usr/bin/env bash
# Loses the primary's machine, as far as one machine can: SIGKILL, at once,
# to the node's pg_autoctl (so nothing restarts its PostgreSQL) and to its
# PostgreSQL with every backend. Nothing is flushed or said goodbye to.
# Prints the name of the node killed. `scripts/ha/up.sh` brings it back
# (it rejoins as a standby of the new primary).
set -euo pipefail
source "$(dirname "$0")/common.sh"
ha_init

primary=$(ha_primary)
[ -n "$primary" ] || ha_die "no primary to kill (is the set-up up? scripts/ha/status.sh)"
pids=()
if keeper=$(ha_keeper_pid "$primary"); then pids+=($(ha_tree "$keeper")); fi
if postmaster=$(ha_postmaster_pid "$(ha_pgdata "$primary")"); then pids+=($(ha_tree "$postmaster")); fi
[ ${#pids[@]} -gt 0 ] || ha_die "$primary has no processes to kill"
kill -KILL "${pids[@]}" 2>/dev/null || true
ha_log "killed $primary (SIGKILL to ${#pids[@]} processes) at $(date -u +%H:%M:%S.%3N)"
echo "$primary"
