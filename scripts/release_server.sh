# Sourced by the measuring and fuzzing scripts: starts a server with the demo
# event on its own private PostgreSQL and stops it when the script exits.
# Usage: start_release_server DATA_DIR PG_PORT ADDR [BINARY]
start_release_server() {
  local data=$1 pg_port=$2 addr=$3 bin=${4:-target/release/frontrow}
  $bin --data-dir "$data" --pg-port "$pg_port" seed-demo >/dev/null
  FRONTROW_RATE_LIMITS=off FRONTROW_SITE_ROOT=target/site RUST_LOG=warn \
    $bin --data-dir "$data" --pg-port "$pg_port" serve --addr "$addr" &
  release_server_pid=$!
  trap 'kill $release_server_pid 2>/dev/null; wait $release_server_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do curl -fs "http://$addr/readyz" >/dev/null && return 0; sleep 0.2; done
  echo "the server at $addr did not become ready" >&2
  return 1
}
