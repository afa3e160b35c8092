#!/usr/bin/env bash
# Where a hold's time goes: a release server on its own private PostgreSQL
# (with pg_stat_statements loaded), saturated with one-seat holds by
# frontrow-loadgen, sampled meanwhile by `perf record` (CPU clock, so it works
# without hardware counters). Prints the server's hottest functions and the
# database's statements by total time; bench/PROFILE.md is written from it.
# With --ceiling the holds are granted by bench/ceiling_hold_batch.sql
# instead, a bare UPDATE per seat: what is left is the HTTP path's share.
# Usage: scripts/profile_holds.sh [--ceiling] [SECONDS]   (after `make bench` built target/loadtest)
set -euo pipefail
cd "$(dirname "$0")/.."
ceiling=
[ "${1:-}" = --ceiling ] && { ceiling=bench/ceiling_hold_batch.sql; shift; }
secs=${1:-10}
data=target/profile-data
pg_port=54342
addr=127.0.0.1:3210
out=target/profile
mkdir -p "$out"
bin=target/loadtest/frontrow
loadgen=target/loadtest/frontrow-loadgen
[ -x "$bin" ] && [ -x "$loadgen" ] || { echo "run make bench first: it builds $bin and $loadgen" >&2; exit 1; }
command -v perf >/dev/null || { apt-get install -y -qq linux-perf >/dev/null; }
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
fr() { "$bin" --data-dir "$data" --pg-port "$pg_port" "$@"; }

rm -rf "$data"
fr seed-demo >/dev/null
fr user bulk --count 2000 --prefix profile --out "$out/fans.tsv" >/dev/null 2>&1

FRONTROW_RATE_LIMITS=off FRONTROW_SITE_ROOT=target/site RUST_LOG=warn "$bin" --data-dir "$data" --pg-port "$pg_port" serve --addr "$addr" >"$out/server.log" 2>&1 &
server=$!
ready() { for _ in $(seq 1 150); do curl -fs "http://$addr/readyz" >/dev/null && return 0; sleep 0.2; done; return 1; }
ready
url=$(fr database-url 2>/dev/null | tail -n1)
pgdata=$(as_pg psql -Atq "$url" -c 'SHOW data_directory')
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; as_pg "$pg_bin/pg_ctl" -D "$pgdata" stop -m fast >/dev/null 2>&1 || true' EXIT
# track = all: the statements inside hold_batch are counted one by one too.
printf "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\n" | as_pg tee -a "$pgdata/postgresql.conf" >/dev/null
# The server rides out the restart (it is built to).
as_pg "$pg_bin/pg_ctl" -D "$pgdata" restart -m fast -w >/dev/null
ready
as_pg psql -q "$url" -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' >/dev/null
[ -n "$ceiling" ] && as_pg psql -q -v ON_ERROR_STOP=1 "$url" -f "$ceiling" >/dev/null

# The server compresses the site's files once after it starts (seconds of
# CPU): let that finish so the profile shows holds only.
sleep 8
as_pg psql -q "$url" -c 'SELECT pg_stat_statements_reset()' >/dev/null
perf record -F 499 -e cpu-clock -g -p "$server" -o "$out/perf.data" -- sleep "$((secs + 2))" >/dev/null 2>&1 &
perf_pid=$!
"$loadgen" --url "http://$addr" --fans-file "$out/fans.tsv" --server-pid "$server" \
  capacity --what holds --concurrency 32 --secs "$secs" --seats 40000 | grep capacity
wait "$perf_pid" || true

echo "== server: hottest functions (self time, share of samples)"
perf report -i "$out/perf.data" --stdio --no-children -g none --percent-limit 1.5 --sort sym 2>/dev/null \
  | grep -E '^ +[0-9]' | head -25
echo "== server: time by library"
perf report -i "$out/perf.data" --stdio --no-children -g none --sort dso 2>/dev/null | grep -E '^ +[0-9]' | head -8
echo "== database: statements by total time"
as_pg psql -q "$url" -P pager=off -c "
  SELECT calls, round(total_exec_time::numeric, 1) AS total_ms, round(mean_exec_time::numeric, 3) AS mean_ms,
         rows, left(regexp_replace(query, '\s+', ' ', 'g'), 120) AS statement
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20"
as_pg psql -q "$url" -P pager=off -c "
  WITH calls AS (SELECT sum(calls) FILTER (WHERE query ILIKE '%hold_batch%') AS n FROM pg_stat_statements),
       held AS (SELECT count(*) AS n FROM seats WHERE state = 'held')
  SELECT calls.n AS batch_calls, held.n AS seats_held, round(held.n::numeric / nullif(calls.n, 0), 1) AS seats_per_call
    FROM calls, held"
