#!/usr/bin/env bash
# Installs whatever the build and the tests need and is missing. Safe to re-run.
# Usage: scripts/setup.sh [--run]   (--run: only what `make run` needs, so a
# first run does not wait for the browser and the failover test's packages)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
for_tests=1
[ "${1:-}" = --run ] && for_tests=

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

apt_packages=()
need_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || apt_packages+=("$1"); }
if [ "$FRONTROW_WASM_MODE" = debian ]; then
  need_pkg rustc-web; need_pkg cargo-web; need_pkg rust-web-src; need_pkg lld-22
fi
command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_pkg postgresql
# wasm-opt and Playwright come from npm.
command -v node >/dev/null 2>&1 || { need_pkg nodejs; need_pkg npm; }
command -v make >/dev/null 2>&1 || need_pkg make
command -v cc >/dev/null 2>&1 || need_pkg gcc
# Scripts wait for the server and measure pages with curl.
command -v curl >/dev/null 2>&1 || need_pkg curl
if [ -n "$for_tests" ]; then
  # The failover test (make test-failover): pg_auto_failover, built for one
  # PostgreSQL major (the installed one, else Debian 12's 15), and HAProxy.
  if ! ls /usr/lib/postgresql/*/lib/pgautofailover.so >/dev/null 2>&1; then
    pg_major=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n1)
    need_pkg "postgresql-${pg_major:-15}-auto-failover"
  fi
  need_pkg pg-auto-failover-cli
  need_pkg haproxy
  need_pkg chromium
  # The API fuzzing in `make test` runs schemathesis (from PyPI) in a venv.
  command -v python3 >/dev/null 2>&1 || need_pkg python3
  python3 -c 'import ensurepip' >/dev/null 2>&1 || need_pkg python3-venv
fi
if [ ${#apt_packages[@]} -gt 0 ]; then
  echo "setup: installing ${apt_packages[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${apt_packages[@]}"
  # rustc-web puts cargo/rustc in /usr/bin; re-read the toolchain choice.
  source scripts/toolchain.sh
fi

# wasm-bindgen's CLI must match the wasm-bindgen crate in Cargo.lock exactly.
wb_version=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
if ! wasm-bindgen --version 2>/dev/null | grep -q " $wb_version\$"; then
  echo "setup: installing wasm-bindgen-cli $wb_version"
  # Without its default TLS (only its test runner fetches anything, and
  # rustls with ring is a good part of the CLI's build), and unoptimised: it
  # builds in 104 s instead of 238 s here and writes the same bytes, in 2.2 s
  # a module instead of 0.5 s (run only for a module that changed).
  cargo install wasm-bindgen-cli --version "$wb_version" --locked --no-default-features --debug \
    || cargo install wasm-bindgen-cli --version "$wb_version" --no-default-features --debug
fi

# Playwright (without its browser download: Debian's chromium is used) and
# binaryen's wasm-opt come from npm. Debian's binaryen (version 108) is not
# used: the modules it optimises fail in the browser (a function table that
# rustc's reference types fill).
if [ ! -x end2end/node_modules/.bin/playwright ] || [ ! -x end2end/node_modules/.bin/wasm-opt ] \
   || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
  echo "setup: installing end2end npm packages"
  (cd end2end && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi
