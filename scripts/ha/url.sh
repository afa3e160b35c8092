#!/usr/bin/env bash
# Prints the application's database URL: through HAProxy, so always the
# primary (`DATABASE_URL=$(scripts/ha/url.sh) target/debug/frontrow serve`).
# With `--restore`: the point-in-time restore's (scripts/ha/restore.sh).
set -euo pipefail
source "$(dirname "$0")/common.sh"
ha_init
if [ "${1:-}" = --restore ]; then
  ha_app_url "$HA_RESTORE_PORT"
else
  ha_app_url
fi
