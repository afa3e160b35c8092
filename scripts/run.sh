#!/usr/bin/env bash
# Builds the server and the site, seeds the demo and serves it.
#
# The demo's server is the debug build, the one `make test` builds too: on
# two cores a release build from nothing takes several times as long, and the
# demo's pages are answered from memory either way (README, "How long the
# first time takes"). A deployment builds with `scripts/build.sh --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
# As in `make test`: incremental-compilation data only costs a clean build disk.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
scripts/build.sh
# The demo sends no real mail: tickets and refund mails land in this file,
# one JSON line each (attachments in base64), unless FRONTROW_SMTP_URL is set.
export FRONTROW_MAIL_OUTBOX=${FRONTROW_MAIL_OUTBOX:-target/demo-outbox.jsonl}
target/debug/frontrow seed-demo
echo
echo "Open http://${FRONTROW_ADDR:-127.0.0.1:3000}/  (Ctrl-C stops the server and its PostgreSQL)"
echo "Mail to buyers is written to $FRONTROW_MAIL_OUTBOX"
exec target/debug/frontrow serve
