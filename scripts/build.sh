#!/usr/bin/env bash
# Builds the server binary and the site (hydration bundle, CSS, public files).
# Usage: scripts/build.sh [--release | --site-only]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh

case "${1:-}" in
  --release) server_profile=release ;;
  --site-only) server_profile="" ;;
  *) server_profile=dev ;;
esac

if [ "$server_profile" = dev ]; then
  # Every crate the tests build, not only the server: cargo settles each
  # dependency's features over the crates it builds, so this is the one set
  # `make test` compiles too (with the server alone, the load generator's
  # dependencies would change chrono's and sqlx's features, and the tests
  # would compile the engine, the app and the server again).
  echo "build: server (dev, toolchain: $FRONTROW_WASM_MODE)"
  cargo build --workspace --exclude frontrow-frontend
elif [ -n "$server_profile" ]; then
  echo "build: server ($server_profile, toolchain: $FRONTROW_WASM_MODE)"
  cargo build -p frontrow-server --profile "$server_profile"
fi

site=target/site
mkdir -p "$site/pkg"
# npm's binaryen: wasm-opt compiled for node, one thread, 30 to 40 s for the
# fans' or the staff's module. It runs in the background while cargo builds
# the next module (the app crate's last minute is one rustc on one core).
wasm_opt=end2end/node_modules/.bin/wasm-opt
[ -x "$wasm_opt" ] || wasm_opt=""
optimising=()
# Three WebAssembly modules: first_pick (an event page's first code: seats
# can be picked before the app arrives), the fans' app (pages a fan sees:
# only their islands) and the staff pages' (the box office's islands too).
# NAME, PACKAGE, then cargo's flags.
wasm_module() {
  local name=$1 package=$2
  shift 2
  echo "build: front end (wasm, $name)"
  cargo build -p "$package" --lib --target wasm32-unknown-unknown --profile wasm-release "${WASM_BUILD_STD[@]}" "$@"
  # The module cargo just produced (the fans' and the staff's share a path,
  # so cargo links each again when the other was built last) and its hash
  # when its bindings and wasm-opt last finished: the same bytes again
  # (`make test` after `make run`) need neither redone.
  local input="target/wasm32-unknown-unknown/wasm-release/${package//-/_}.wasm"
  local stamp="target/site-stamps/$name" made
  made=$(sha256sum "$input" | cut -d' ' -f1)
  if [ -n "$wasm_opt" ] && [ -f "$site/pkg/${name}_bg.wasm" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$made" ]; then
    return 0
  fi
  rm -f "$stamp"
  # Bindings now, before the next cargo build overwrites the shared input.
  wasm-bindgen --target web --no-typescript --out-dir "$site/pkg" --out-name "$name" "$input"
  if [ -n "$wasm_opt" ]; then
    (
      "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-reference-types \
        --enable-sign-ext --enable-mutable-globals "$site/pkg/${name}_bg.wasm" -o "$site/pkg/${name}_bg.opt.wasm"
      mv "$site/pkg/${name}_bg.opt.wasm" "$site/pkg/${name}_bg.wasm"
      mkdir -p "${stamp%/*}" && echo "$made" >"$stamp"
    ) &
    optimising+=($!)
  else
    echo "build: wasm-opt is missing (scripts/setup.sh installs it): $name is not size-optimised" >&2
  fi
}
# The staff's before the fans': the fans' module optimises faster, so less
# of it is left when cargo is done.
wasm_module first_pick frontrow-first-pick
wasm_module frontrow_staff frontrow-frontend --features staff
wasm_module frontrow frontrow-frontend
for job in "${optimising[@]}"; do
  wait "$job"
done
cp style/main.css "$site/pkg/frontrow.css"
cp -r public/. "$site/"
echo "build: site in $site (wasm: first pick $(du -sh "$site/pkg/first_pick_bg.wasm" | cut -f1), fans $(du -sh "$site/pkg/frontrow_bg.wasm" | cut -f1), staff $(du -sh "$site/pkg/frontrow_staff_bg.wasm" | cut -f1))"
