#!/usr/bin/env bash
# Point-in-time restore: the latest base backup (or --backup DIR) copied
# into a fresh data dir, WAL replayed from the archive up to --target-time
# (a timestamp PostgreSQL reads, e.g. '2026-12-01 18:40:05.123+00'; without
# it: all the WAL archived), across failovers (the newest timeline is
# followed). It then runs as a primary of its own on 127.0.0.1:25404, apart
# from the set-up (it archives nothing and waits for no standby), for the
# audit or for copying data back. Prints its database URL.
#
#   scripts/ha/restore.sh --target-time '2026-12-01 18:40:05+00'
#   target/debug/frontrow --database-url "$(scripts/ha/url.sh --restore)" audit
set -euo pipefail
source "$(dirname "$0")/common.sh"
ha_close_inherited_fds
ha_init

target=""
backup=""
while [ $# -gt 0 ]; do
  case "$1" in
    --target-time) target=$2; shift 2 ;;
    --backup) backup=$2; shift 2 ;;
    *) ha_die "usage: restore.sh [--target-time TIMESTAMP] [--backup DIR]" ;;
  esac
done
if [ -z "$backup" ]; then
  backup=$(ls -d "$HA_BACKUPS"/base-* 2>/dev/null | sort | tail -n1)
  [ -n "$backup" ] || ha_die "no base backup in $HA_BACKUPS: take one with scripts/ha/backup.sh"
fi
[ -f "$backup/PG_VERSION" ] || ha_die "$backup is not a base backup"
started=$(ha_now)

# The WAL written up to now is made a complete segment and waited for in
# the archive (otherwise the last minutes may still sit in the primary's
# current segment, up to archive_timeout).
if lsn=$(ha_psql "$HA_PROXY_PORT" postgres "SELECT pg_walfile_name(pg_switch_wal())" 2>/dev/null); then
  deadline=$((SECONDS + 60))
  until [ -f "$HA_ARCHIVE/$lsn" ]; do
    [ $SECONDS -lt $deadline ] || ha_die "WAL segment $lsn did not reach the archive"
    sleep 0.2
  done
else
  ha_log "the primary is not reachable: restoring from what the archive has"
fi

data=$HA_PG/restore
if ha_postmaster_pid "$data" >/dev/null; then
  ha_as_pg pg_ctl -D "$data" stop -m fast -w -t 30 >/dev/null
fi
rm -rf "$data"
ha_as_pg cp -a "$backup" "$data"
ha_as_pg rm -f "$data/standby.signal" "$data/backup_manifest"
ha_as_pg touch "$data/recovery.signal"
# postgresql.auto.conf is read last: these win over the node's settings.
{
  echo "# point-in-time restore (scripts/ha/restore.sh)"
  echo "port = $HA_RESTORE_PORT"
  echo "listen_addresses = '$HA_HOST'"
  echo "unix_socket_directories = ''"
  echo "archive_mode = off"
  echo "synchronous_standby_names = ''"
  echo "primary_conninfo = ''"
  echo "primary_slot_name = ''"
  echo "restore_command = 'cp \"$HA_ARCHIVE/%f\" \"%p\"'"
  echo "recovery_target_timeline = 'latest'"
  echo "recovery_target_action = 'promote'"
  if [ -n "$target" ]; then
    echo "recovery_target_time = '$target'"
    echo "recovery_target_inclusive = true"
  fi
} | ha_as_pg tee -a "$data/postgresql.auto.conf" >/dev/null
log=$HA_LOGS/restore.log
: >"$log"
[ -n "$HA_RUN_AS" ] && chown "$HA_RUN_AS" "$log"
ha_as_pg pg_ctl -D "$data" -l "$log" -w -t 600 start >/dev/null || ha_die "the restore did not start: see $log"
deadline=$((SECONDS + 600))
until [ "$(ha_psql "$HA_RESTORE_PORT" postgres 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; do
  [ $SECONDS -lt $deadline ] || ha_die "the restore did not finish recovery: see $log"
  sleep 0.2
done
ha_log "restored $(basename "$backup") to ${target:-the end of the archive} in $(ha_since "$started") s, on $HA_HOST:$HA_RESTORE_PORT"
ha_app_url "$HA_RESTORE_PORT"
