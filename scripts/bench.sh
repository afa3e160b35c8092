#!/usr/bin/env bash
# Load run: a release server on its own private PostgreSQL, driven by
# frontrow-loadgen over loopback, then pgbench doing the raw conditional
# seat UPDATE on the same cluster, so the two rates can be compared as a ratio
# measured in one run on one machine.
# Usage: scripts/bench.sh [FANS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
fans=${1:-64}
secs=${2:-10}
data=target/bench-data
pg_port=54332
addr=127.0.0.1:3200

# Built one at a time so the server is the same binary `make run` serves.
scripts/build.sh --release
cargo build --release -p frontrow-loadgen
bin=target/release/frontrow
source scripts/release_server.sh
start_release_server $data $pg_port $addr

echo "== frontrow over HTTP ($fans fans, ${secs}s)"
out=$(target/release/frontrow-loadgen --url "http://$addr" --fans "$fans" --seconds "$secs")
echo "$out"
event=$(echo "$out" | sed -n 's/^event \([0-9a-f-]*\):.*/\1/p')
holds_per_s=$(echo "$out" | sed -n 's/.*holds granted *[0-9]* (\([0-9]*\)\/s).*/\1/p')

echo "== pgbench: the bare conditional UPDATE on the same seats ($fans clients, ${secs}s)"
sock=$(readlink -f $data/pg/sock)
[ ${#sock} -le 80 ] || sock=$(ls -d /tmp/frontrow-pg-* | head -n1)
script=$(mktemp)
cat > "$script" <<SQL
\set row random(1, 50)
\set n random(1, 37)
UPDATE seats SET version = nextval('seat_version_seq')
 WHERE event_id = '$event' AND seat_id = 'L-' || :row || '-' || :n AND state = 'available';
SQL
tps=$(pgbench -n -c "$fans" -j 2 -T "$secs" -f "$script" -h "$sock" -p $pg_port -U postgres frontrow 2>/dev/null \
      | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
rm -f "$script"
echo "pgbench raw UPDATE: ${tps} tx/s"
awk -v a="$holds_per_s" -v b="$tps" 'BEGIN { if (b > 0) printf "ratio: frontrow holds granted (each with a release) / raw UPDATEs = %.3f\n", a / b }'

$bin --data-dir $data --pg-port $pg_port audit --event "$event"
