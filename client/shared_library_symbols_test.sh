#!/usr/bin/env bash
# The dynamic symbols libbreaker_client.so defines are exactly the functions c_api.h declares:
# nothing of the C++ inside leaks out (it would clash with a program's own gRPC or Abseil),
# and nothing declared is missing (a binding would fail to link or load).
set -euo pipefail

runfiles="${TEST_SRCDIR:-${RUNFILES_DIR:-$0.runfiles}}"
here="$runfiles/${TEST_WORKSPACE:-breaker}/client"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"

# The declarations, comments removed by the preprocessor: every `breaker_name(` that is not a
# typedef's `(*breaker_name)`.
cpp -P "$here/c_api.h" |
  grep -oE '\bbreaker_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$tmp/declared"
# The defined dynamic symbols other objects can bind to: global and weak ones (nm's upper-case
# types, and "u" for GNU unique). Local ones stay out: the thread-local cache of an inline
# template (client/policy_cell.h) is in the dynamic table only for its TLS relocations.
nm -D --defined-only "$here/libbreaker_client.so" | awk '$2 ~ /^[A-Zu]$/ {print $3}' |
  sort -u >"$tmp/exported"

if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "FAIL: libbreaker_client.so's dynamic symbols (+) differ from c_api.h's functions (-);" \
    "export only breaker_* (client/breaker_client.lds) and declare each in c_api.h" >&2
  exit 1
fi
echo "PASS: $(wc -l <"$tmp/declared") functions, each exported, nothing else"
