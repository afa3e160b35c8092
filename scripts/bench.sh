#!/usr/bin/env bash
# `make bench`: the load scenarios of the on-sale, run against a server (then
# two behind nginx) on its own private PostgreSQL, next to the machine's own
# limits measured in the same run (pgbench on the same cluster, GET /healthz),
# and written to bench/REPORT.md with JSON per scenario under target/bench/.
#
# Environment:
#   FRONTROW_BENCH_SCALE    share of the issue's sizes (default 0.1: 1,000 seats, 10,000 fans)
#   FRONTROW_BENCH_PROFILE  release (default) or debug (uses target/debug, builds only the
#                           load generator, writes target/bench/REPORT-debug.md)
#   FRONTROW_BENCH_DATA, FRONTROW_BENCH_PG_PORT, FRONTROW_BENCH_PORT  where it runs
#                           (the port and the next two: instance 2 and nginx)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh

scale=${FRONTROW_BENCH_SCALE:-0.1}
profile=${FRONTROW_BENCH_PROFILE:-release}
data=${FRONTROW_BENCH_DATA:-target/bench-data}
pg_port=${FRONTROW_BENCH_PG_PORT:-54332}
port=${FRONTROW_BENCH_PORT:-3200}
addr1=127.0.0.1:$port addr2=127.0.0.1:$((port + 1)) proxy=127.0.0.1:$((port + 2))
out=target/bench
mkdir -p "$out"
began=$(date +%s)
# Each step says how far into the run it starts.
step() { echo "== $* (at $(( $(date +%s) - began )) s)"; }

# Sizes from the scale; rates are what two cores answer comfortably at 0.1.
calc() { awk "BEGIN { v = $1; printf \"%d\", (v < ${2:-1}) ? ${2:-1} : v }"; }
seats=$(calc "10000 * $scale" 100)
fans=$(calc "100000 * $scale" 500)
hold_rate=$(calc "2000 * $scale" 20)
read_rate=$(calc "1000 * $scale" 10)
restart_rate=$(calc "300 * $scale" 10)
restart_seats=$(calc "$restart_rate * 20 * 3" 500)
capacity_seats=$(calc "400000 * $scale" 2000)
joins_fans=$(calc "50000 * $scale" 2000)
viewers=$(calc "50000 * $scale" 100)
# The two-instance run checks the same invariants through a proxy: half the crowd.
half_seats=$(calc "$seats / 2" 100) half_fans=$(calc "$fans / 2" 500)
total_fans=$(( fans > joins_fans ? fans : joins_fans ))
# Short holds so abandoned seats come back (and are sold) within the run;
# the slower debug server needs longer ones to pay in time.
hold_ttl=${FRONTROW_BENCH_HOLD_TTL:-$([ "$profile" = release ] && echo 6 || echo 15)}
max_secs=${FRONTROW_BENCH_MAX_SECS:-150}

# Every viewer and waiting fan keeps a socket open: as many as allowed.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# pgbench and nginx come from Debian's packages.
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
command -v pgbench >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 || missing+=(postgresql-contrib)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

# The load generator reads pages and JSON and runs no browser code, so the
# hydration bundle (a slow, size-optimised WebAssembly build) is not needed:
# only the server and the generator are built, in one cargo run, optimised as
# release (the `loadtest` profile, kept apart from target/release). Leptos'
# erased component types (`--cfg erase_components`) cut that build by a
# sixth; they touch only the page render (views boxed, not inlined), not the
# holds, the seat list or the live frames.
if [ "$profile" = release ]; then
  echo "bench: building the server and the load generator (optimised)"
  RUSTFLAGS="--cfg erase_components" cargo build --profile loadtest -p frontrow-server -p frontrow-loadgen
  bin=target/loadtest/frontrow loadgen=target/loadtest/frontrow-loadgen
  report=bench/REPORT.md
else
  cargo build -p frontrow-server -p frontrow-loadgen
  bin=target/debug/frontrow loadgen=target/debug/frontrow-loadgen
  report=$out/REPORT-debug.md
fi
built=$(( $(date +%s) - began ))
fr() { "$bin" --data-dir "$data" --pg-port "$pg_port" "$@"; }
# The private cluster belongs to the postgres user when we are root; it
# answers its own user only.
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pids=()
nginx_pid=""
cleanup() {
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -n "${pgdata:-}" ] && as_pg "$pg_bin/pg_ctl" -D "$pgdata" stop -m fast >/dev/null 2>&1 || true
}
trap cleanup EXIT

# A fresh cluster every run, so runs compare.
if [ -d "$data" ]; then
  old=$(find "$data" -maxdepth 4 -path '*/data/PG_VERSION' -printf '%h\n' 2>/dev/null | head -n1 || true)
  [ -n "$old" ] && as_pg "$pg_bin/pg_ctl" -D "$old" stop -m fast >/dev/null 2>&1 || true
  rm -rf "$data"
fi
fr seed-demo >/dev/null
# The servers' and nginx's logs are this run's alone.
rm -f "$out"/server-*.log "$out/nginx.log"
fr user bulk --count "$total_fans" --prefix bench --out "$out/fans.tsv" 2>/dev/null

serve() {
  FRONTROW_RATE_LIMITS=off FRONTROW_SITE_ROOT=target/site FRONTROW_SOCKETS_PER_ADDRESS=1000000 RUST_LOG=warn \
    "$bin" --data-dir "$data" --pg-port "$pg_port" serve --addr "$1" >>"$out/server-$1.log" 2>&1 &
  pids+=($!)
  local ready=
  for _ in $(seq 1 150); do curl -fs "http://$1/readyz" >/dev/null && { ready=1; break; }; sleep 0.2; done
  [ -n "$ready" ] || { echo "bench: the server at $1 did not become ready (see $out/server-$1.log)" >&2; return 1; }
  # A fresh server spends its first seconds compressing the site's files at
  # brotli's best: measure after that, not during it. A file is served in
  # brotli once its bytes are ready.
  local file
  for file in target/site/pkg/*; do
    [ -e "$file" ] || continue
    for _ in $(seq 1 600); do
      curl -fs -o /dev/null -D - -H 'accept-encoding: br' "http://$1/pkg/${file##*/}" | grep -qi '^content-encoding: br' && break
      sleep 0.2
    done
  done
}
serve "$addr1"
pid1=${pids[0]}
url=$(fr database-url 2>/dev/null)
# Wherever the cluster made its home, it knows where its data is.
pgdata=$(as_pg psql -Atq "$url" -c 'SHOW data_directory')
[ -n "$pgdata" ] || { echo "bench: cannot find the cluster's data directory" >&2; exit 1; }
bench_url=${url/\/frontrow\?/\/bench?}

lg() { "$loadgen" --url "http://$addr1" --fans-file "$out/fans.tsv" --server-pid "$pid1" "$@"; }
json() { sed -n "s/^ *\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -n1; }

step "baselines: the machine's own limits (same cluster, same server)"
as_pg psql -q "$url" -c "DROP DATABASE IF EXISTS bench" -c "CREATE DATABASE bench" >/dev/null
as_pg psql -q "$bench_url" >/dev/null <<'SQL'
CREATE TABLE seats (seat_id int PRIMARY KEY, state text NOT NULL, version bigint NOT NULL);
INSERT INTO seats SELECT g, 'available', 0 FROM generate_series(1, 100000) g;
CREATE TABLE joins (ticket bigserial PRIMARY KEY, event_id uuid NOT NULL, user_id uuid NOT NULL, joined_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE changes (tx xid8 NOT NULL DEFAULT pg_current_xact_id(), id bigint GENERATED ALWAYS AS IDENTITY, message text NOT NULL, PRIMARY KEY (tx, id));
VACUUM ANALYZE;
SQL
sql_dir=$(mktemp -d); chmod 755 "$sql_dir"
# One conditional single-row UPDATE per transaction (no trigger on this table),
# flipping the seat so every statement finds a row to change.
cat >"$sql_dir/update.sql" <<'SQL'
\set id random(1, 100000)
UPDATE seats SET state = CASE state WHEN 'available' THEN 'held' ELSE 'available' END, version = version + 1
 WHERE seat_id = :id AND state IN ('available', 'held');
SQL
# A hold and its release as pgbench would do them: the same seat taken and
# given back, two statements, two commits (one cycle per "transaction").
cat >"$sql_dir/cycle.sql" <<'SQL'
\set id random(1, 100000)
UPDATE seats SET state = 'held', version = version + 1 WHERE seat_id = :id AND state = 'available';
UPDATE seats SET state = 'available', version = version + 1 WHERE seat_id = :id AND state = 'held';
SQL
cat >"$sql_dir/insert.sql" <<'SQL'
INSERT INTO joins (event_id, user_id) VALUES ('00000000-0000-0000-0000-000000000001', gen_random_uuid());
SQL
# The same UPDATE telling the live maps the two ways: a NOTIFY in its
# transaction (as seat changes did), a row in a change log (as they do now).
cat >"$sql_dir/update-notify.sql" <<'SQL'
\set id random(1, 100000)
WITH u AS (UPDATE seats SET state = CASE state WHEN 'available' THEN 'held' ELSE 'available' END, version = version + 1
            WHERE seat_id = :id AND state IN ('available', 'held') RETURNING seat_id)
SELECT pg_notify('bench_seats', '{"c":[["A-1-1",1,"held",0,false,0]]}') FROM u;
SQL
cat >"$sql_dir/update-log.sql" <<'SQL'
\set id random(1, 100000)
WITH u AS (UPDATE seats SET state = CASE state WHEN 'available' THEN 'held' ELSE 'available' END, version = version + 1
            WHERE seat_id = :id AND state IN ('available', 'held') RETURNING seat_id)
INSERT INTO changes (message) SELECT '{"c":[["A-1-1",1,"held",0,false,0]]}' FROM u;
SQL
chmod 644 "$sql_dir"/*.sql
pgb() { as_pg "$pg_bin/pgbench" -n -c 32 -j 2 -T 6 -f "$1" "$bench_url" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
update_tps=$(pgb "$sql_dir/update.sql" | xargs printf '%.0f')
insert_tps=$(pgb "$sql_dir/insert.sql" | xargs printf '%.0f')
update_notify_tps=$(pgb "$sql_dir/update-notify.sql" | xargs printf '%.0f')
update_log_tps=$(pgb "$sql_dir/update-log.sql" | xargs printf '%.0f')
cycle_tps=$(pgb "$sql_dir/cycle.sql" | xargs printf '%.0f')
rm -rf "$sql_dir"
as_pg psql -q "$url" -c "DROP DATABASE bench" >/dev/null
# The baselines wrote a lot of WAL: checkpoint now, so the checkpoint they
# would otherwise set off does not land on the measurements that follow.
as_pg psql -q "$url" -c "CHECKPOINT" >/dev/null
echo "pgbench: conditional UPDATE $update_tps/s (with a NOTIFY $update_notify_tps/s, with a change-log row $update_log_tps/s; hold and release as two UPDATEs $cycle_tps cycles/s), INSERT $insert_tps/s"
# The page at 10,000 seats whatever the scale: the size the map was made for.
for what in healthz seats page fan-page holds cycles purchases joins; do
  case $what in holds|cycles) n=$capacity_seats ;; purchases) n=20000 ;; page|fan-page) n=10000 ;; *) n=$seats ;; esac
  lg --json-out "$out/capacity-$what.json" capacity --what "$what" --concurrency 32 --secs 6 --seats "$n" | grep capacity
done
rate_of() { json "$out/capacity-$1.json" ok_per_second | xargs printf '%.0f'; }
healthz_rps=$(rate_of healthz) seats_rps=$(rate_of seats) page_rps=$(rate_of page) fan_page_rps=$(rate_of fan-page) holds_rps=$(rate_of holds) cycles_rps=$(rate_of cycles) purchases_rps=$(rate_of purchases) joins_rps=$(rate_of joins)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }

status=0
scenario() { # name, then loadgen arguments
  local name=$1; shift
  step "$name"
  lg --json-out "$out/$name.json" --md-out "$out/$name.md" "$@" >/dev/null || { echo "bench: $name: a check failed"; status=1; }
  local ev; ev=$(json "$out/$name.json" event_id)
  { cat "$out/$name.md"; echo; echo "Audit (\`frontrow audit --event $ev\`):"; echo; echo '```'
    fr audit --event "$ev" 2>/dev/null || { echo "AUDIT FAILED"; status=1; }
    echo '```'; echo; } >"$out/$name.section.md"
}

scenario onsale onsale --seats "$seats" --fans "$fans" --arrival-secs 10 --hold-ttl "$hold_ttl" --max-secs "$max_secs" --title "1. On-sale"
scenario hot-seat hot-seat --seats "$seats" --rate "$hold_rate" --phase-secs 8
scenario storm storm --seats "$seats" --read-rate "$read_rate" --hold-rate "$hold_rate" --phase-secs 8
scenario restart restart --seats "$restart_seats" --rate "$restart_rate" --secs 20 --restart-at 8 \
  --restart-cmd "$( [ "$(id -u)" -eq 0 ] && echo "runuser -u postgres -- ")$pg_bin/pg_ctl -D $pgdata restart -m fast -w >/dev/null"

scenario fanout fanout --seats "$seats" --viewers "$viewers" --hold-rate "$(calc "100 * $scale" 5)" --secs 8

step "two instances behind nginx"
serve "$addr2"
pid2=${pids[1]}
ngx=$(mktemp -d)
cat >"$ngx/nginx.conf" <<NGINX
# Two workers, each with its own share of file descriptors: every waiting
# fan keeps a socket open through the proxy (two descriptors each).
worker_processes 2;
worker_rlimit_nofile $(ulimit -Hn);
pid $ngx/nginx.pid;
error_log $ngx/error.log warn;
daemon off;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $ngx/body; proxy_temp_path $ngx/proxy; fastcgi_temp_path $ngx/fastcgi;
  uwsgi_temp_path $ngx/uwsgi; scgi_temp_path $ngx/scgi;
  upstream frontrow { server $addr1; server $addr2; keepalive 256; }
  map \$http_upgrade \$connection_upgrade { default upgrade; '' ''; }
  server {
    listen $proxy reuseport;
    location / {
      proxy_pass http://frontrow;
      proxy_http_version 1.1;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection \$connection_upgrade;
      proxy_set_header Host \$host;
      proxy_read_timeout 600s;
    }
  }
}
NGINX
"$nginx_bin" -c "$ngx/nginx.conf" -p "$ngx" 2>>"$out/nginx.log" &
nginx_pid=$!
for _ in $(seq 1 50); do curl -fs "http://$proxy/healthz" >/dev/null && break; sleep 0.1; done
name=two-instances
"$loadgen" --url "http://$proxy" --fans-file "$out/fans.tsv" --server-pid "$pid1" --server-pid "$pid2" \
  --json-out "$out/$name.json" --md-out "$out/$name.md" onsale --seats "$half_seats" --fans "$half_fans" --arrival-secs 5 \
  --hold-ttl "$hold_ttl" --max-secs "$max_secs" --title "5. Two instances behind nginx (round robin)" \
  --watch-url "http://$addr1" --watch-url "http://$addr2" >/dev/null || { echo "bench: $name: a check failed"; status=1; }
ev=$(json "$out/$name.json" event_id)
{ cat "$out/$name.md"; echo; echo "Audit (\`frontrow audit --event $ev\`):"; echo; echo '```'
  fr audit --event "$ev" 2>/dev/null || { echo "AUDIT FAILED"; status=1; }
  echo '```'; echo; } >"$out/$name.section.md"
kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; nginx_pid=""
rm -rf "$ngx"

step "the whole cluster"
RUST_LOG=error fr audit >"$out/audit-all.json" 2>/dev/null || { echo "bench: the audit of every event failed"; status=1; }

# ------------------------------------------------------------------ report
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
{
  echo "# frontrow bench report"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/REPORT.md' 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "- machine: $(nproc) cores, $cpu, $mem, $(uname -sr)"
  echo "- PostgreSQL: $("$pg_bin/postgres" --version | sed 's/^postgres //'), nginx $("$nginx_bin" -v 2>&1 | sed 's/.*nginx\///')"
  echo "- profile: $profile; scale $scale of the issue's sizes ($seats seats, $fans fans); load generator on the same machine"
  echo "- run took $(( $(date +%s) - began )) s: $built s of builds, then the cluster, the fans and the scenarios"
  echo
  echo "Latencies are from HDR histograms and count from each request's intended start (open-model arrivals), so a stall is not hidden by the generator waiting. CPU per request is the server processes' user+system time (from /proc) over the requests sent; 'machine' is every process, the load generator and PostgreSQL included."
  echo
  echo "## Against the machine's own limits (same run, same cluster)"
  echo
  echo "| frontrow | rate | bare baseline | rate | ratio |"
  echo "|---|---:|---|---:|---:|"
  echo "| holds granted/s (one seat, no conflicts, 32 callers) | $holds_rps | pgbench single-row conditional UPDATE, plain table, no trigger (32 clients) | $update_tps | $(ratio "$holds_rps" "$update_tps") |"
  echo "| hold + release cycles/s (each caller its own seat, 32 callers, p99 $(json "$out/capacity-cycles.json" p99_ms | xargs printf '%.1f') ms) | $cycles_rps | pgbench, the same seat's UPDATE to held then back, two commits (32 clients) | $cycle_tps | $(ratio "$cycles_rps" "$cycle_tps") |"
  echo "| purchases/s (hold one seat, then check out with the simulated provider's good card, 32 callers, p99 $(json "$out/capacity-purchases.json" p99_ms | xargs printf '%.1f') ms) | $purchases_rps | pgbench, hold and release cycles as above | $cycle_tps | $(ratio "$purchases_rps" "$cycle_tps") |"
  echo "| seat-map JSON reads/s ($seats seats) | $seats_rps | same server, GET /healthz (fixed bytes) | $healthz_rps | $(ratio "$seats_rps" "$healthz_rps") |"
  echo "| seat-map pages/s, signed out (10,000 seats, gzip, p99 $(json "$out/capacity-page.json" p99_ms | xargs printf '%.1f') ms) | $page_rps | same server, GET /healthz (fixed bytes) | $healthz_rps | $(ratio "$page_rps" "$healthz_rps") |"
  echo "| seat-map pages/s, signed in (each fan's own, p99 $(json "$out/capacity-fan-page.json" p99_ms | xargs printf '%.1f') ms) | $fan_page_rps | same server, GET /healthz (fixed bytes) | $healthz_rps | $(ratio "$fan_page_rps" "$healthz_rps") |"
  echo "| queue joins/s | $joins_rps | pgbench single-row INSERT (32 clients) | $insert_tps | $(ratio "$joins_rps" "$insert_tps") |"
  echo
  echo "Telling the live maps, on the bare UPDATE: with a NOTIFY in its transaction (as seat changes did before the change log) $update_notify_tps/s ($(ratio "$update_notify_tps" "$update_tps") of the bare rate); with a change-log row instead (as they do now) $update_log_tps/s ($(ratio "$update_log_tps" "$update_tps"))."
  echo
  for what in healthz seats page fan-page holds cycles purchases joins; do
    echo "- saturation, $what: $(rate_of "$what")/s, server CPU $(json "$out/capacity-$what.json" server_cpu_ms_per_request | xargs printf '%.3f') ms/request"
  done
  echo
  for name in onsale hot-seat storm restart two-instances fanout; do
    [ -f "$out/$name.section.md" ] && cat "$out/$name.section.md"
  done
  echo "## Audit of every event"
  echo
  echo '```'
  cat "$out/audit-all.json"
  echo '```'
} >"$report"
echo "bench: wrote $report ($(( $(date +%s) - began )) s)"
exit $status
