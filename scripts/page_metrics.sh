#!/usr/bin/env bash
# Page weight and first render of the 10,000-seat demo map: a release server
# on its own private PostgreSQL, measured with curl (bytes on the wire,
# gzip) and real Chromium (paint and hydration times).
# Usage: scripts/page_metrics.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
runs=${1:-7}
data=target/metrics-data
pg_port=54333
addr=127.0.0.1:3300

# FRONTROW_SKIP_BUILD=1 measures the release build already in target/.
[ "${FRONTROW_SKIP_BUILD:-}" = 1 ] || scripts/build.sh --release
source scripts/release_server.sh
start_release_server $data $pg_port $addr
event=$(curl -fs "http://$addr/api/v1/events" | sed -n 's/.*"event_id":"\([0-9a-f-]*\)".*/\1/p' | head -n1)

wire() { curl -fs -H 'Accept-Encoding: gzip' -o /dev/null -w '%{size_download}' "http://$addr$1"; }
raw() { curl -fs -o /dev/null -w '%{size_download}' "http://$addr$1"; }
html_raw=$(raw "/events/$event"); html_gz=$(wire "/events/$event")
wasm_raw=$(raw /pkg/frontrow_bg.wasm); wasm_gz=$(wire /pkg/frontrow_bg.wasm)
js_raw=$(raw /pkg/frontrow.js); js_gz=$(wire /pkg/frontrow.js)
css_raw=$(raw /pkg/frontrow.css); css_gz=$(wire /pkg/frontrow.css)
kb() { echo "$(( ($1 + 512) / 1024 )) KB"; }
echo "== page weight of the 10,000-seat event page (bytes on the wire, gzip)"
echo "HTML (with the SVG map): $(kb "$html_gz") (raw $(kb "$html_raw"))"
echo "WASM:                    $(kb "$wasm_gz") (raw $(kb "$wasm_raw"))"
echo "JS:                      $(kb "$js_gz") (raw $(kb "$js_raw"))"
echo "CSS:                     $(kb "$css_gz") (raw $(kb "$css_raw"))"
echo "total:                   $(kb $((html_gz + wasm_gz + js_gz + css_gz)))"
echo "== server render of the event page (curl, 10 requests)"
for _ in $(seq 1 10); do curl -fs -H 'Accept-Encoding: gzip' -o /dev/null -w '%{time_starttransfer}\n' "http://$addr/events/$event"; done \
  | sort -n | awk '{ t[NR] = $1 } END { printf "time to first byte: median %.1f ms\n", t[int((NR + 1) / 2)] * 1000 }'
echo "== first render in Chromium ($runs runs)"
(cd end2end && node perf/first-render.mjs "http://$addr" "$event" "$runs")
