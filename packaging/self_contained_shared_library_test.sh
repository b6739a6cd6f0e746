#!/usr/bin/env bash
# libbreaker_client.so.1 is self-contained: it needs only libc, libm and the loader at run time,
# its dynamic symbols are exactly the functions c_api.h declares, a C program linked with it
# passes the C API's own tests, and one that loads it with dlopen (as a JVM or Python node
# would) can call it.
set -euo pipefail

runfiles="${TEST_SRCDIR:-${RUNFILES_DIR:-$0.runfiles}}"
root="$runfiles/${TEST_WORKSPACE:-breaker}"
library="$root/packaging/self_contained/libbreaker_client.so.1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"

needed=$(readelf -d "$library" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort)
unexpected=$(echo "$needed" | grep -vxE 'libc\.so\.6|libm\.so\.6|ld-linux-x86-64\.so\.2' || true)
if [ -n "$unexpected" ]; then
  echo "FAIL: libbreaker_client.so.1 needs ${unexpected//$'\n'/ } at run time; only libc," \
    "libm and the loader are allowed (add its static archive to static_deps in" \
    "packaging/BUILD.bazel)" >&2
  exit 1
fi
if readelf -d "$library" | grep -E 'TEXTREL|STATIC_TLS' >/dev/null; then
  echo "FAIL: libbreaker_client.so.1 has text relocations or static TLS: an archive in it is" \
    "not position-independent (tools/pic_deps.sh rebuilds such archives):" \
    "$(readelf -d "$library" | grep -E 'TEXTREL|FLAGS')" >&2
  exit 1
fi

cpp -P "$root/client/c_api.h" |
  grep -oE '\bbreaker_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$tmp/declared"
nm -D --defined-only "$library" | awk 'NF == 3 {print $3}' | sed 's/@.*//' | sort -u \
  >"$tmp/exported"
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "FAIL: libbreaker_client.so.1's dynamic symbols (+) differ from c_api.h's functions (-):" \
    "a dependency's symbol exported would clash with a program's own copy" \
    "(client/breaker_client.lds, packaging/self_contained.bzl)" >&2
  exit 1
fi

# Linked as a program links the installed library: -lbreaker_client, found by its SONAME.
mkdir -p "$tmp/include/client" "$tmp/lib"
cp "$root/client/c_api.h" "$tmp/include/client/"
cp "$library" "$tmp/lib/libbreaker_client.so.1"
ln -sf libbreaker_client.so.1 "$tmp/lib/libbreaker_client.so"
cc -std=c11 -I"$tmp/include" -o "$tmp/c_api_test" "$root/client/c_api_test.c" \
  -L"$tmp/lib" -lbreaker_client -lm
LD_LIBRARY_PATH="$tmp/lib" "$tmp/c_api_test"

cat >"$tmp/load.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  void* library = dlopen(argv[argc - 1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  int (*abi_version)(void) = (int (*)(void))dlsym(library, "breaker_abi_version");
  if (abi_version == NULL || abi_version() == 0) {
    fprintf(stderr, "breaker_abi_version: %s\n", abi_version ? "0" : dlerror());
    return 1;
  }
  return dlclose(library);
}
C
cc -std=c11 -o "$tmp/load" "$tmp/load.c" -ldl
"$tmp/load" "$tmp/lib/libbreaker_client.so.1" || {
  echo "FAIL: a program cannot load libbreaker_client.so.1 with dlopen" >&2
  exit 1
}
echo "PASS: $(wc -l <"$tmp/declared") functions exported, nothing else; NEEDED:" \
  "${needed//$'\n'/ }"
