#!/usr/bin/env bash
# Checks that the C++ files of the folders below are as clang-format (.clang-format) writes
# them: `clang-format --dry-run --Werror`, which names each file and line that differs. Run
# from anywhere; .ci/run runs it. To fix a file: `clang-format -i FILE`.
#
# The folders kept formatted; a folder joins the list once its files are formatted.
set -euo pipefail
cd "$(dirname "$0")/.."

folders=(bindings client common core ctl examples packaging proto service sidecar tests)

mapfile -t files < <(git ls-files -- "${folders[@]/%//*.cc}" "${folders[@]/%//*.h}")
if [ "${#files[@]}" -eq 0 ]; then
  echo "format_check.sh: no C++ files in ${folders[*]}" >&2
  exit 1
fi
clang-format --dry-run --Werror "${files[@]}"
echo "format_check.sh: ${#files[@]} files of ${folders[*]} as clang-format writes them" >&2
