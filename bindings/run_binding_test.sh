#!/usr/bin/env bash
# Runs a binding's own tests with its own toolchain, from Debian (/usr/bin first on PATH, so
# that a newer toolchain elsewhere is not used), offline, against the libbreaker_client.so,
# breakerd and breakerctl of the test's runfiles.
#
#   run_binding_test.sh go|rust
set -euo pipefail

language="$1"
runfiles="${TEST_SRCDIR:-${RUNFILES_DIR:-$0.runfiles}}"
root="$runfiles/${TEST_WORKSPACE:-breaker}"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"

fail() {
  echo "bindings: FAIL $*" >&2
  exit 1
}

export PATH="/usr/bin:/bin:$PATH"
# The toolchains write caches under HOME, which the sandbox does not let them write.
export HOME="$tmp/home"
mkdir -p "$HOME"

library="$(readlink -f "$root/client/libbreaker_client.so")"
library_dir="$(dirname "$library")"
# Under --config=asan or tsan the library needs its sanitizer's runtime loaded before anything
# else, which a Go or Rust test binary does not do (and Go's -race brings a runtime of its
# own): these runs leave the C side to //client:c_api_test and //client:c_api_cycle_test.
if readelf -d "$library" | grep -qE 'NEEDED.*lib(asan|tsan)\.so'; then
  echo "bindings: skipped: libbreaker_client.so is built with ASan or TSan;" \
    "the C API's own tests run under it instead" >&2
  exit 0
fi
# The C compiler's layout of the sized structs, which each binding's layout test compares with
# its own.
export BREAKER_C_LAYOUT="$tmp/c_api_layout.txt"
"$root/client/c_api_layout" >"$BREAKER_C_LAYOUT"
export BREAKERD="$root/service/breakerd"
export BREAKERCTL="$root/ctl/breakerctl"
[ -x "$BREAKERD" ] || fail "breakerd is not in the runfiles"

# A writable copy of the sources, laid out as in the repository (cgo finds client/c_api.h
# three levels up; cargo writes beside Cargo.toml).
src="$tmp/src"
mkdir -p "$src/client"
cp -L "$root/client/c_api.h" "$src/client/"
cp -rL "$root/bindings" "$src/bindings"

case "$language" in
  go)
    command -v go >/dev/null || fail "go is not installed; run \`bash tools/setup.sh\`"
    export GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOFLAGS=-mod=mod GOPROXY=off
    export CGO_LDFLAGS="-L$library_dir -Wl,-rpath,$library_dir"
    cd "$src/bindings/go"
    go version
    go vet ./...
    go test -count=1 -v ./...
    GODEBUG=cgocheck=2 go test -race -count=1 ./...
    ;;
  rust)
    command -v cargo >/dev/null || fail "cargo is not installed; run \`bash tools/setup.sh\`"
    export CARGO_HOME="$tmp/cargo" CARGO_TARGET_DIR="$tmp/target" BREAKER_CLIENT_LIB_DIR="$library_dir"
    cd "$src/bindings/rust/breaker-client"
    rustc --version
    cargo test --offline --locked --all-features -- --nocapture
    cargo build --offline --locked --all-features --examples
    ;;
  *)
    fail "unknown language '$language': go or rust"
    ;;
esac
