#!/usr/bin/env bash
# Runs the project's tests under a sanitizer (the configs of .bazelrc):
#
#   tools/sanitize.sh asan|ubsan|tsan|asan,ubsan [BAZEL_TEST_FLAG...]
#
# asan,ubsan builds once with both (they combine; tsan combines with neither).
# Each sanitizer builds in an output base of its own under $BREAKER_SANITIZE_DIR (default
# ~/.cache/breaker-sanitize/<config>), so that switching sanitizers rebuilds nothing twice and
# the ordinary build's cache and bazel-* links stay as they are.
set -euo pipefail

usage="usage: tools/sanitize.sh asan|ubsan|tsan|asan,ubsan [BAZEL_TEST_FLAG...]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
config="$1"
shift
case "$config" in
  asan | ubsan | tsan | asan,ubsan) ;;
  *) echo "tools/sanitize.sh: unknown sanitizer '$config'; $usage" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
dir="${BREAKER_SANITIZE_DIR:-$HOME/.cache/breaker-sanitize}/$config"
source tools/project_targets.sh
# Sanitized binaries run two to fifteen times slower: every test gets the long timeout.
configs=()
for c in ${config//,/ }; do configs+=("--config=$c"); done
exec bazel --output_base="$dir/output_base" test "${configs[@]}" --symlink_prefix=/ \
  --test_timeout=900 "$@" -- "${targets[@]}"
