#!/usr/bin/env bash
# Builds everything and runs every test: Rust (unit + integration, against a
# private PostgreSQL unless DATABASE_URL is set) and Playwright in Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
# A build from a clean checkout gains nothing from incremental-compilation
# data, which costs gigabytes of disk (set CARGO_INCREMENTAL=1 to keep it).
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

# The wasm crate is built apart (its `hydrate` features must not leak into
# the server build); the test build also produces target/debug/frontrow.
cargo_test=(cargo test --workspace --exclude frontrow-frontend --no-fail-fast)
echo "test: build"
"${cargo_test[@]}" --no-run
scripts/build.sh --site-only

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
echo "test: cargo test"
"${cargo_test[@]}" 2>&1 | tee "$log/cargo.txt"

echo "test: schema-driven fuzzing of the JSON API (schemathesis, all checks)"
scripts/fuzz_api.sh 2>&1 | tee "$log/fuzz.txt"

echo "test: end-to-end (Playwright, Chromium)"
(cd end2end && npx playwright test) 2>&1 | tee "$log/e2e.txt"

echo "test: audit of the end-to-end database"
target/debug/frontrow --data-dir target/e2e-data --pg-port 54331 audit

# The test clusters are private to this checkout; stop them so nothing is left running.
for dir in target/test-pg/pg/data target/outage-pg/pg/data target/private-pg-test/pg/data target/history-pg/pg/data target/e2e-data/pg/data target/fuzz-data/pg/data; do
  [ -f "$dir/postmaster.pid" ] || continue
  owner=$(stat -c %U "$dir")
  bin=$(dirname "$(command -v pg_ctl || ls /usr/lib/postgresql/*/bin/pg_ctl | tail -n1)")
  if [ "$(id -u)" -eq 0 ] && [ "$owner" != root ]; then
    runuser -u "$owner" -- "$bin/pg_ctl" -D "$dir" stop -m fast >/dev/null || true
  else
    "$bin/pg_ctl" -D "$dir" stop -m fast >/dev/null || true
  fi
done
# One closing line for the whole run.
passed=$(awk '/^test result: ok\./ { n += $4 } END { print n + 0 }' "$log/cargo.txt")
e2e=$(sed -n 's/^ *\([0-9]*\) passed.*/\1/p' "$log/e2e.txt" | tail -n1)
echo "tests: $((passed + ${e2e:-0})) passed, 0 failed"
