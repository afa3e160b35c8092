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

echo "build: front end (wasm)"
cargo build -p frontrow-frontend --lib --target wasm32-unknown-unknown --profile wasm-release "${WASM_BUILD_STD[@]}"

site=target/site
mkdir -p "$site/pkg"
wasm-bindgen --target web --no-typescript --out-dir "$site/pkg" --out-name frontrow \
  target/wasm32-unknown-unknown/wasm-release/frontrow_frontend.wasm
wasm_opt=end2end/node_modules/.bin/wasm-opt
if [ -x "$wasm_opt" ]; then
  "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-reference-types \
    --enable-sign-ext --enable-mutable-globals "$site/pkg/frontrow_bg.wasm" -o "$site/pkg/frontrow_bg.opt.wasm"
  mv "$site/pkg/frontrow_bg.opt.wasm" "$site/pkg/frontrow_bg.wasm"
fi
cp style/main.css "$site/pkg/frontrow.css"
cp -r public/. "$site/"
echo "build: site in $site ($(du -sh "$site/pkg/frontrow_bg.wasm" | cut -f1) wasm)"
