#!/usr/bin/env bash
# Takes a base backup of the primary while it serves, through HAProxy (so
# whichever node is primary now): pg_basebackup, plain format, with the WAL
# it needs streamed alongside (-X stream), so the backup alone restores to
# the moment it ended; every later moment is reached by replaying the WAL
# archive (scripts/ha/restore.sh). Checked with pg_verifybackup. Prints the
# backup's directory.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ha_init

name=base-$(date -u +%Y%m%dT%H%M%S.%3NZ)
dir=$HA_BACKUPS/$name
started=$(ha_now)
ha_as_pg mkdir -p "$HA_BACKUPS"
ha_as_pg pg_basebackup -h "$HA_HOST" -p "$HA_PROXY_PORT" -U postgres --no-password -D "$dir" \
  -X stream --checkpoint=fast --label="frontrow $name" >>"$HA_LOGS/backup.log" 2>&1 \
  || ha_die "pg_basebackup failed: see $HA_LOGS/backup.log"
ha_as_pg pg_verifybackup -q "$dir" || ha_die "the backup $dir does not verify"
ha_log "base backup $name taken and verified in $(ha_since "$started") s ($(du -sh "$dir" | cut -f1))"
echo "$dir"
