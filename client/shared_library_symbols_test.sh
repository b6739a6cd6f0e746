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
# The SONAME names the ABI version of the header.
abi="$(cpp -P -dM "$here/c_api.h" | awk '$2 == "BREAKER_ABI_VERSION" {print $3}')"
soname="$(readelf -d "$here/libbreaker_client.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
if [ "$soname" != "libbreaker_client.so.$abi" ]; then
  echo "FAIL: SONAME is '$soname'; BREAKER_ABI_VERSION $abi wants libbreaker_client.so.$abi" >&2
  exit 1
fi
cmp -s "$here/libbreaker_client.so" "$here/libbreaker_client.so.$abi" ||
  { echo "FAIL: libbreaker_client.so.$abi is not a copy of libbreaker_client.so" >&2; exit 1; }
echo "PASS: $(wc -l <"$tmp/declared") functions, each exported, nothing else; SONAME $soname"
