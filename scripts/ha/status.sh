#!/usr/bin/env bash
# What the high-availability set-up is doing: the monitor's view of the
# nodes, HAProxy's view of them, the WAL archive and the base backups.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ha_init
echo "data: $HA_PG"
ha_as_pg pg_autoctl show state --pgdata "$(ha_pgdata monitor)" 2>/dev/null || echo "monitor: not running"
echo
echo "HAProxy ($HA_HOST:$HA_PROXY_PORT):"
curl -fsS "http://$HA_HOST:$HA_STATS_PORT/;csv" 2>/dev/null | awk -F, '$1 == "postgres_primary" && $2 ~ /^node/ { print "  " $2 ": " $18 }' || echo "  not running"
echo
echo "WAL archive: $(ls "$HA_ARCHIVE" 2>/dev/null | wc -l) files in $HA_ARCHIVE"
echo "base backups: $(ls "$HA_BACKUPS" 2>/dev/null | tr '\n' ' ')"
