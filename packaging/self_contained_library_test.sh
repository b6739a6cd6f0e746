#!/usr/bin/env bash
# libbreaker_client.a is self-contained: its global definitions are exactly the functions
# c_api.h declares, and a C program linked with it and the static link line breaker-client.pc
# gives (libstdc++ and libgcc statically) needs only the C library at run time, and passes the C
# API's own tests.
set -euo pipefail

runfiles="${TEST_SRCDIR:-${RUNFILES_DIR:-$0.runfiles}}"
root="$runfiles/${TEST_WORKSPACE:-breaker}"
archive="$root/packaging/libbreaker_client.a"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"

# Under a sanitizer (tools/sanitize.sh) the archive's objects call the sanitizer's runtime, which
# a program linked as breaker-client.pc says cannot have: what is shipped is never sanitized,
# and the ordinary build checks it.
# Not grep -q: stopping at the first match would kill nm on its next write, failing the pipeline.
if nm -u "$archive" | grep -E '__(asan|ubsan|tsan)_' >/dev/null; then
  echo "SKIP: libbreaker_client.a was built with a sanitizer; the ordinary build checks it"
  exit 0
fi

cpp -P "$root/client/c_api.h" |
  grep -oE '\bbreaker_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$tmp/declared"
# Global, weak, GNU unique and common definitions: anything another object could bind to.
nm -g --defined-only "$archive" | awk 'NF == 3 {print $3}' | sort -u >"$tmp/exported"
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "FAIL: libbreaker_client.a's global symbols (+) differ from c_api.h's functions (-):" \
    "a dependency's symbol left global would clash with a program's own copy" \
    "(packaging/self_contained.bzl localizes them)" >&2
  exit 1
fi

# Compiled and linked with the static link line breaker-client.pc gives, with the archive's
# directory as libdir.
mkdir -p "$tmp/include/client"
cp "$root/client/c_api.h" "$tmp/include/client/"
libs=$(sed -n 's/^# Libs (static): //p' "$root/packaging/breaker-client.pc.in")
[ -n "$libs" ] || { echo "FAIL: breaker-client.pc.in gives no static link line" >&2; exit 1; }
libs="${libs//\$\{libdir\}/$(dirname "$archive")}"
# shellcheck disable=SC2086 # the flags are words
cc -std=c11 -I"$tmp/include" -o "$tmp/c_api_test" "$root/client/c_api_test.c" $libs

needed=$(readelf -d "$tmp/c_api_test" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort)
unexpected=$(echo "$needed" | grep -vxE 'libc\.so\.6|libm\.so\.6|ld-linux-x86-64\.so\.2' || true)
if [ -n "$unexpected" ]; then
  echo "FAIL: a program linked with libbreaker_client.a needs ${unexpected//$'\n'/ } at run time;" \
    "only libc, libm and the loader are allowed (add the static archive to static_deps in" \
    "packaging/BUILD.bazel)" >&2
  exit 1
fi

"$tmp/c_api_test"
echo "PASS: $(wc -l <"$tmp/declared") functions exported, nothing else;" \
  "NEEDED: ${needed//$'\n'/ }"
