#!/usr/bin/env bash
# Installs the Debian 12 packages this project builds and tests with.
# Idempotent: does nothing when every package is already present.
set -euo pipefail

packages=(
  bazel-bootstrap           # the build (Bazel 4.2.3, WORKSPACE mode)
  g++                       # the C++17 compiler Bazel's auto-configured toolchain uses
  libgrpc++-dev             # gRPC C++ 1.51, with reflection and health
  protobuf-compiler-grpc    # grpc_cpp_plugin
  libprotobuf-dev           # Protobuf 3.21 runtime and well-known types
  protobuf-compiler         # protoc
  libabsl-dev               # Abseil 20220623: Status, containers, time, synchronization
  libgoogle-glog-dev        # logging
  libgtest-dev              # GoogleTest
  libgmock-dev              # GoogleMock
  libbenchmark-dev          # Google Benchmark
  libsqlite3-dev            # the state store
  etcd-server               # the etcd state store's tests run real etcd 3.4 members
  etcd-client               # etcdctl: inspecting and operating an etcd store
  golang-etcd-server-dev    # etcd's v3 API .proto files, compiled for the etcd state store
  golang-github-gogo-protobuf-dev  # gogoproto/gogo.proto, which etcd's .proto files import
  golang-github-gogo-googleapis-dev  # google/api/annotations.proto, likewise
  libssl-dev                # libcrypto: bearer-token digests, TLS key checks (gRPC uses it too)
  prometheus-cpp-dev        # breakerd's /metrics endpoint (prometheus-cpp 1.0: core and pull)
  libcpp-httplib-dev        # breaker-sidecar: the validator port's HTTP server, the Beacon API client (cpp-httplib 0.11)
  libmicrohttpd-dev         # breaker-sidecar: the builder API ports' HTTP server (libmicrohttpd 0.9.75)
  libcurl4-openssl-dev      # breaker-sidecar: its pooled HTTP/1.1 and TLS client towards relays (libcurl 7.88)
  nlohmann-json3-dev        # breaker-sidecar: JSON of the builder API (header-only)
  prometheus                # tests/observability: a real Prometheus 2.42 scrapes a live fleet; promtool tests the alert rules
  golang-go                 # bindings/go: the Go package over the C API (Go 1.19, standard library only)
  rustc                     # bindings/rust: the Rust crate over the C API (rustc 1.63)
  cargo                     # bindings/rust: builds and tests the crate offline
  librust-log-dev           # bindings/rust: its `log` feature, the library's lines to the log facade (log 0.4)
  clang-14                  # the fuzz targets under libFuzzer (tools/fuzz.sh; docs/development.md, Fuzzing)
  libclang-rt-14-dev        # libFuzzer and the sanitizers' runtimes for clang 14
  curl                      # the README's tour (tests/docs:readme_tour_test) asks the sidecar with it
  make                      # tests/lodestar: node-gyp builds Lodestar's native modules
  python3                   # tests/lodestar: node-gyp runs on it
  python3-yaml              # packaging/container:examples_test reads the compose and Kubernetes examples
  dpkg-dev                  # tools/package.sh: dpkg-shlibdeps computes the packages' Depends; apt-get source
  cmake                     # tools/pic_deps.sh: rebuilds Abseil's and Protobuf's archives position-independent
  ninja-build               # tools/pic_deps.sh and tools/httplib_archive.sh: their builds
  unicode-data              # tools/pic_deps.sh: RE2's tables, from Debian's Unicode data as Debian's build does
  meson                     # tools/httplib_archive.sh: cpp-httplib's static archive, built as Debian builds its library
  lintian                   # tools/install_test.sh: the packages pass lintian
  mmdebstrap                # tools/install_test.sh and the image: minimal Debian 12 and 13 roots
  podman                    # the container image: built, loaded and run by tools/install_test.sh
  runc                      # podman's runtime here (Debian's default crun refuses hybrid cgroups)
  iproute2                  # tools/install_test.sh: a network namespace of its own (ip netns)
  systemd                   # systemd-analyze verifies and rates the packaged units (packaging/systemd)
)
# Node.js and npm for tests/interop and tests/lodestar, from Debian only when no node is
# installed already.
command -v node >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# A test's npm packages, exactly as its package-lock.json pins them, into <dir>/node_modules
# (git-ignored). A stamp of the lockfile skips `npm ci` (which deletes and refetches everything)
# when nothing changed, so a second run stays offline.
#   npm_ci DIR [NPM_CI_FLAG...]
npm_ci() {
  local dir="$1"
  shift
  local name="${dir#"$repo"/}"
  local stamp="$dir/node_modules/.setup-lock.sha256"
  local lock_sum
  lock_sum=$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" = "$lock_sum" ]; then
    echo "setup: $name/node_modules up to date"
    return
  fi
  command -v npm >/dev/null || { echo "setup: npm is missing: install npm beside node" >&2; exit 1; }
  echo "setup: npm ci in $name"
  (cd "$dir" && npm ci "$@" --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$lock_sum" >"$stamp"
}

repo="$(cd "$(dirname "$0")/.." && pwd)"
# The interop test's gRPC client. No install scripts: none of the locked packages needs one.
npm_ci "$repo/tests/interop" --ignore-scripts
# Lodestar for tests/lodestar. Its native modules (BLS, LevelDB, snappy, ...) build from source
# with node-gyp (python3, make, g++), which is why package.json's allowScripts approves their
# install scripts; the two that first try to download a prebuilt binary fall back to building.
npm_ci "$repo/tests/lodestar"
