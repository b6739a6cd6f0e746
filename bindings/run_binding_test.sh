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
# (grep reads the whole listing: with -q it would stop at the first match, and readelf, writing
# into the closed pipe, would fail the check under pipefail.)
if readelf -d "$library" | grep -E 'NEEDED.*lib(asan|tsan)\.so' >/dev/null; then
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
    # The package carries its own copy of the header, for a vendored copy to build.
    cmp -s "$src/client/c_api.h" breaker/c_api.h ||
      fail "bindings/go/breaker/c_api.h differs from client/c_api.h: copy client/c_api.h over it"
    go version
    go vet ./...
    go test -count=1 -v ./...
    GODEBUG=cgocheck=2 go test -race -count=1 ./...
    # A node's module with the package vendored, far from this repository's layout: it builds
    # with -mod=vendor and runs.
    node="$tmp/node"
    mkdir -p "$node/vendor/breaker.dev/bindings/go"
    cp -r breaker "$node/vendor/breaker.dev/bindings/go/"
    rm "$node"/vendor/breaker.dev/bindings/go/breaker/*_test.go
    printf 'module example.com/node\n\ngo 1.19\n\nrequire breaker.dev/bindings/go v0.1.0\n' >"$node/go.mod"
    printf '# breaker.dev/bindings/go v0.1.0\n## explicit; go 1.19\nbreaker.dev/bindings/go/breaker\n' \
      >"$node/vendor/modules.txt"
    cat >"$node/main.go" <<'GO'
package main

import (
	"context"
	"fmt"

	"breaker.dev/bindings/go/breaker"
)

func main() {
	c, err := breaker.Dial(context.Background(), breaker.Options{Addresses: []string{"127.0.0.1:1"}, NodeID: "vendored"})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Println("vendored package:", c.Policy().Source)
}
GO
    (cd "$node" && GOFLAGS=-mod=vendor go build -o node . && ./node) | grep "vendored package: local" >/dev/null ||
      fail "the vendored copy of the Go package does not build or run"
    echo "bindings: a vendored copy of the Go package builds and runs"
    ;;
  rust)
    command -v cargo >/dev/null || fail "cargo is not installed; run \`bash tools/setup.sh\`"
    export CARGO_HOME="$tmp/cargo" CARGO_TARGET_DIR="$tmp/target" BREAKER_CLIENT_LIB_DIR="$library_dir"
    cd "$src/bindings/rust/breaker-client"
    rustc --version
    cargo test --offline --locked --all-features -- --nocapture
    cargo build --offline --locked --all-features --examples
    # The whole slot of docs/integration.md.
    slot="$(cargo run --offline --locked --all-features --example whole_slot)"
    echo "$slot"
    grep -q "chosen builder: 9" <<<"$slot" && grep -q "reported: 6" <<<"$slot" ||
      fail "examples/whole_slot.rs did not run the slot as docs/integration.md says"

    ;;
  *)
    fail "unknown language '$language': go or rust"
    ;;
esac
