#!/usr/bin/env bash
# `make map-bench`: the stadium-scale figures. A release server and site on
# a private PostgreSQL with the demo events (the 10,000-seat hall, the
# 80,000-place stadium with its standing floor) and a 50,000-seat stadium;
# then, in real Chromium, cold and signed in, the time from navigation to a
# seat selected and the bytes transferred before one can be picked; then
# live fan-out to 5,000 viewers of one event and to 50,000 on one instance
# (or as many as the descriptor limit lets one process hold), with the
# server's memory per viewer. Prints everything and writes bench/MAPS.md.
#
# Environment: FRONTROW_MAP_BENCH_RUNS (Chromium loads per venue, default 5),
# FRONTROW_SKIP_BUILD=1 (measure the release build already in target/),
# FRONTROW_MAP_BENCH_VIEWERS (the big fan-out, default 50000),
# FRONTROW_MAP_BENCH_FANOUT=off (the pages only; the report stays in
# target/map-bench/MAPS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
runs=${FRONTROW_MAP_BENCH_RUNS:-5}
big=${FRONTROW_MAP_BENCH_VIEWERS:-50000}
data=target/map-bench-data
pg_port=54335
addr=127.0.0.1:3500
out=target/map-bench
mkdir -p "$out" bench

if [ "${FRONTROW_SKIP_BUILD:-}" != 1 ]; then
  scripts/build.sh --release
  cargo build --release -p frontrow-loadgen
fi
bin=target/release/frontrow
loadgen=target/release/frontrow-loadgen

# Every viewer is a socket at both ends: raise the descriptor limit as far
# as this account may (root: well past 100,000).
ulimit -Hn 1048576 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
limit=$(ulimit -n)
# Each viewer costs the server and the generator one descriptor each.
capped=""
if [ $((big + 2000)) -gt "$limit" ]; then
  capped="One process may hold $limit descriptors on this machine (and this account may not raise it), so the big fan-out ran $((limit - 2000)) viewers, not $big."
  echo "map-bench: $capped"
  big=$((limit - 2000))
fi

fr() { "$bin" --data-dir "$data" --pg-port "$pg_port" "$@"; }
rm -rf "$data"
fr seed-demo >/dev/null
fr seed-stadium --name "Stadium 50k" --sections 40 --lower-rows 33 --upper-rows 40 --floor 0
fr user bulk --count 40 --prefix mapbench --out "$out/fans.tsv" >/dev/null
cookie=$(head -n1 "$out/fans.tsv" | cut -f2)

# The hall of 10,000 is measured both ways: every seat on one map, and
# through the overview (which starts above 4,000 seats for this run; the
# default is set from these figures).
serve() {
  FRONTROW_RATE_LIMITS=off FRONTROW_SITE_ROOT=target/site FRONTROW_SOCKETS_PER_ADDRESS=1000000 FRONTROW_OVERVIEW_ABOVE=4000 RUST_LOG=warn \
    "$bin" --data-dir "$data" --pg-port "$pg_port" serve --addr "$addr" >>"$out/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 150); do curl -fs "http://$addr/readyz" >/dev/null && return 0; sleep 0.2; done
  echo "map-bench: the server did not become ready (see $out/server.log)" >&2
  return 1
}
server=""
trap '[ -n "$server" ] && kill $server 2>/dev/null; wait 2>/dev/null || true' EXIT
serve
event() { curl -fs "http://$addr/api/v1/events" | python3 -c "import json,sys; print(next(e['event_id'] for e in json.load(sys.stdin)['events'] if e['name'] == sys.argv[1]))" "$1"; }
# A hall of N seats in four sections of 50-seat rows (for where the
# overview starts to pay: every seat on one map, at a few sizes).
jar=$out/staff.cookies
curl -fs -c "$jar" -H 'content-type: application/json' -d '{"email":"staff@frontrow.test","password":"frontrow-demo"}' "http://$addr/api/v1/auth/login" >/dev/null
hall_of() {
  python3 - "$1" <<'PY' | curl -fs -b "$jar" -H 'content-type: application/json' -d @- "http://$addr/api/v1/admin/events" | python3 -c "import json,sys; print(json.load(sys.stdin)['event_id'])"
import json, sys
n = int(sys.argv[1]); rows = n // 200
section = lambda name: {"section": name, "rows": [{"row": str(r), "seats": 50, "tier": "Standard"} for r in range(1, rows + 1)]}
print(json.dumps({"name": f"Hall {n}", "kind": "concert", "venue": "Bench Hall", "starts_at": "2031-01-01T20:00:00Z",
  "sale_opens_at": "2020-01-01T00:00:00Z", "tiers": [{"tier": "Standard", "price_cents": 5000}], "sections": [section(s) for s in "ABCD"]}))
PY
}
small=$(hall_of 2000)
medium=$(hall_of 4000)
hall=$(event "The Midnight Aurora: World Tour")
stadium=$(event "Stadium 50k")
festival=$(event "Summer Stadium Festival")

report=$out/MAPS.md
{
  echo "# Stadium-scale maps: measured"
  echo
  echo "\`make map-bench\` on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)."
  echo "Release server and site, its own PostgreSQL, Chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}'), all on this machine."
  echo
  echo "## From navigation to a seat selected (Chromium, cold, signed in; median of $runs)"
  echo
  echo "Through a section where the venue opens on its overview (the fan clicks the section as soon as the overview shows it)."
  echo
} >"$report"
venues=(
  "2,000-seat hall, every seat on one map|/events/$small|"
  "4,000-seat hall, every seat on one map|/events/$medium|"
  "10,000-seat hall, every seat on one map (as before the overview)|/events/$hall?view=whole|"
  "10,000-seat hall, overview → section A|/events/$hall|A"
  "50,000-seat stadium, overview → section 107|/events/$stadium|107"
  "80,000 places (70,000 seats, a 10,000-place floor), overview → section 107|/events/$festival|107")
(cd end2end && node perf/pick-a-seat.mjs "http://$addr" "$cookie" "$runs" "${venues[@]}") | tee -a "$report"
{
  echo
  echo "The same pages without the first-pick module (refused, so the page loads the app at once and a seat can be picked when the app is ready): the page as it was before that module, on this build, in this run."
  echo
} | tee -a "$report"
(cd end2end && PICK_WITH=app node perf/pick-a-seat.mjs "http://$addr" "$cookie" "$runs" "${venues[@]}") | tee -a "$report"

if [ "${FRONTROW_MAP_BENCH_FANOUT:-on}" = off ]; then
  echo "map-bench: pages only, written to $report"
  exit 0
fi

# Each fan-out on a freshly started server, so its memory per viewer is
# its own.
fanout() {
  local name=$1
  shift
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true
  serve
  "$loadgen" --url "http://$addr" --fans-file "$out/fans.tsv" --server-pid "$server" \
    --json-out "$out/fanout-$name.json" --md-out "$out/fanout-$name.md" fanout "$@" >/dev/null || true
  cat "$out/fanout-$name.md" >>"$report"
  grep -E "viewers watching|per viewer|hold answered|hold sent" "$out/fanout-$name.md"
}
echo | tee -a "$report"
[ -z "$capped" ] || { echo "$capped"; echo; } >>"$report"
echo "== live fan-out: 5,000 viewers of the 50,000-seat stadium, a section each"
fanout sections-5k --event-id "$stadium" --view sections --viewers 5000 --hold-rate 20 --secs 10 --report-section 1
echo "== live fan-out: $big viewers of the 50,000-seat stadium on one instance, a section each"
fanout sections-big --event-id "$stadium" --view sections --viewers "$big" --hold-rate 20 --secs 10 --local-addresses 4 --report-section 2
echo "== live fan-out: 5,000 viewers of the 10,000-seat hall's whole map"
fanout whole-5k --event-id "$hall" --view whole --viewers 5000 --hold-rate 20 --secs 10 --report-section 3
cp "$report" bench/MAPS.md
echo "map-bench: written to bench/MAPS.md"
