#!/usr/bin/env bash
# Builds a release server and the site, seeds the demo and serves it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
scripts/build.sh --release
target/release/frontrow seed-demo
echo
echo "Open http://${FRONTROW_ADDR:-127.0.0.1:3000}/  (Ctrl-C stops the server and its PostgreSQL)"
exec target/release/frontrow serve
