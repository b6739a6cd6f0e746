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
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
