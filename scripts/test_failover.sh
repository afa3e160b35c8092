#!/usr/bin/env bash
# `make test-failover`: losing the database machine, and backups. Brings up
# the high-availability set-up of scripts/ha from nothing (a pg_auto_failover
# monitor, a primary with its synchronous standby, HAProxy in front, all on
# loopback, all under target/ha), then runs the failover test against it:
# a sale in progress through the real server, the primary SIGKILLed, every
# acknowledged hold and booking checked, a base backup taken mid-sale
# restored to a point in time after the failover and audited
# (server/tests/api/failover.rs). Last, the killed node is brought back and
# rejoins as a standby. Everything started is stopped on the way out.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
started=$SECONDS

cleanup() { scripts/ha/down.sh >/dev/null 2>&1 || true; }
trap cleanup EXIT

# The same selection as scripts/test.sh, so that after `make test` nothing
# is built again.
cargo_test=(cargo test --workspace --exclude frontrow-frontend --test api)
echo "test-failover: build"
"${cargo_test[@]}" --no-run

echo "test-failover: the set-up (monitor, primary, synchronous standby, HAProxy)"
scripts/ha/down.sh --purge >/dev/null
scripts/ha/up.sh
FRONTROW_HA_URL=$(scripts/ha/url.sh)
export FRONTROW_HA_URL

echo "test-failover: a sale, the primary killed, a point-in-time restore"
"${cargo_test[@]}" failover -- --ignored --nocapture --test-threads=1

echo "test-failover: the killed node comes back"
rejoin=$SECONDS
scripts/ha/up.sh
echo "test-failover: the killed node rejoined as a synchronous standby in $((SECONDS - rejoin)) s"
scripts/ha/status.sh

echo "test-failover: passed in $((SECONDS - started)) s"
