#!/usr/bin/env bash
# Builds the whole project under clang's thread-safety analysis (--config=tsa, .bazelrc): every
# ABSL_GUARDED_BY and ABSL_EXCLUSIVE_LOCKS_REQUIRED is checked against breaker::Mutex
# (common/mutex.h), and a lock not held where one is required fails the build.
#
#   tools/tsa.sh [BAZEL_BUILD_FLAG...]
#
# Choosing clang re-runs Bazel's toolchain configuration, so the build keeps an output base of
# its own under $BREAKER_TSA_DIR (default ~/.cache/breaker-tsa), where it neither rebuilds nor
# disturbs the gcc builds.
set -euo pipefail

cd "$(dirname "$0")/.."
dir="${BREAKER_TSA_DIR:-$HOME/.cache/breaker-tsa}"
source tools/project_targets.sh
exec bazel --output_base="$dir/output_base" build --config=tsa "$@" -- "${targets[@]}"
