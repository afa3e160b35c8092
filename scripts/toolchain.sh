# Sourced by the other scripts: picks the Rust toolchain that can build the
# WebAssembly front end on this machine.
#
# - rustup with the wasm32-unknown-unknown target installed: the ordinary path.
# - otherwise (no way to download that target): Debian's rustc-web/cargo-web,
#   which build the wasm standard library from source (-Zbuild-std). The
#   server is built with the same toolchain so both share one target dir.
if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  FRONTROW_WASM_MODE=rustup
  WASM_BUILD_STD=()
else
  FRONTROW_WASM_MODE=debian
  export PATH="/usr/bin:$PATH"
  export RUSTC_BOOTSTRAP=1
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld-22
  WASM_BUILD_STD=(-Zbuild-std=std,panic_abort)
  # Link the server and the tests with LLVM's lld (installed for the wasm
  # linker) rather than GNU ld: a debug binary of 600 MB links in seconds
  # instead of most of a minute. rustup's toolchains use their own lld already.
  if [ -x /usr/lib/llvm-22/bin/ld.lld ]; then
    export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C link-arg=-fuse-ld=lld -C link-arg=-B/usr/lib/llvm-22/bin"
  fi
fi
# cargo-installed tools (wasm-bindgen) live here, after the toolchain.
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
# Builds never need a database: queries are checked against .sqlx/.
export SQLX_OFFLINE=true
export FRONTROW_WASM_MODE
