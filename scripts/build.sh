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

if [ -n "$server_profile" ]; then
  echo "build: server ($server_profile, toolchain: $FRONTROW_WASM_MODE)"
  cargo build -p frontrow-server --profile "$server_profile"
fi

site=target/site
mkdir -p "$site/pkg"
wasm_opt=end2end/node_modules/.bin/wasm-opt
# Two bundles: the fans' (pages a fan sees: only their islands) and the
# staff pages' (the box office's islands too). NAME, then cargo's flags.
bundle() {
  local name=$1
  shift
  echo "build: front end (wasm, $name)"
  cargo build -p frontrow-frontend --lib --target wasm32-unknown-unknown --profile wasm-release "${WASM_BUILD_STD[@]}" "$@"
  wasm-bindgen --target web --no-typescript --out-dir "$site/pkg" --out-name "$name" \
    target/wasm32-unknown-unknown/wasm-release/frontrow_frontend.wasm
  if [ -x "$wasm_opt" ]; then
    "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-reference-types \
      --enable-sign-ext --enable-mutable-globals "$site/pkg/${name}_bg.wasm" -o "$site/pkg/${name}_bg.opt.wasm"
    mv "$site/pkg/${name}_bg.opt.wasm" "$site/pkg/${name}_bg.wasm"
  else
    echo "build: wasm-opt is missing (scripts/setup.sh installs it): $name is not size-optimised" >&2
  fi
}
bundle frontrow
bundle frontrow_staff --features staff
cp style/main.css "$site/pkg/frontrow.css"
cp -r public/. "$site/"
echo "build: site in $site (wasm: fans $(du -sh "$site/pkg/frontrow_bg.wasm" | cut -f1), staff $(du -sh "$site/pkg/frontrow_staff_bg.wasm" | cut -f1))"
