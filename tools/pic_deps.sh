#!/usr/bin/env bash
# Rebuilds, position-independent, the few Debian 12 static archives a shared object cannot hold,
# and prints the directory that holds them.
#
# Debian compiles its static archives for executables (-fPIE). Most of them a shared object can
# still hold, but not these: in libprotobuf.a, libre2.a and four of Abseil's archives the
# thread-local variables use the local-exec model (R_X86_64_TPOFF32 relocations), and
# libgflags.a and Abseil's libabsl_str_format_internal.a read the C library's stdout and
# stderr through a copy relocation (R_X86_64_PC32): the linker refuses both in a shared object.
# Abseil's libabsl_cord.a reads a thread-local in the initial-exec model (R_X86_64_GOTTPOFF),
# which would mark the library STATIC_TLS, and so keep a program from loading it with dlopen.
# The self-contained libbreaker_client.so takes these archives from here instead, and every
# other one (gRPC, the rest of Abseil, glog, c-ares, OpenSSL, zlib) from Debian.
#
# Each archive is rebuilt from Debian's own source package (apt-get source, verified against
# Debian's signed index), at the version installed, with Debian's patches, Debian's compiler
# flags (dpkg-buildflags) and Debian's build options, plus -fPIC. Abseil keeps Debian's
# absl/base/options.h, and so its inline namespace. The result is cached under
# ${XDG_CACHE_HOME:-~/.cache}/breaker/pic-deps/, keyed by the four versions and this script; a
# later run only prints the directory.
#
# Needs: dpkg-dev (apt-get source), cmake, ninja-build, make, unicode-data (RE2's tables) and
# Debian's archive with its sources (deb.debian.org; a private source list, the machine's apt
# configuration is left alone).
# Usage: tools/pic_deps.sh   (progress on stderr, the directory on stdout)
set -euo pipefail
# shellcheck source=tools/debian_sources.sh
source "$(dirname "$0")/debian_sources.sh"

# The source packages, each with its installed version and the archives to rebuild.
source_version() { dpkg-query -W -f='${source:Version}' "$1"; }
abseil_version="$(source_version libabsl-dev)"
protobuf_version="$(source_version libprotobuf-dev)"
re2_version="$(source_version libre2-dev)"
gflags_version="$(source_version libgflags-dev)"
abseil_archives=(absl_base absl_cordz_functions absl_raw_hash_set absl_random_internal_pool_urbg
  absl_str_format_internal absl_cord)

cache="${XDG_CACHE_HOME:-$HOME/.cache}/breaker/pic-deps"
key="abseil-${abseil_version}_protobuf-${protobuf_version}_re2-${re2_version}"
key+="_gflags-${gflags_version}_recipe-$(sha256sum "$0" | cut -c1-8)"  # this script's
dir="$cache/${key//[^A-Za-z0-9._+-]/_}"
if [ -f "$dir/complete" ]; then
  echo "$dir"
  exit 0
fi

log() { echo "pic_deps: $*" >&2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
jobs="$(nproc)"
# Debian's flags for C++, with -fPIC; without -g, as the library ships stripped.
cxxflags="$(dpkg-buildflags --get CXXFLAGS | sed 's/\(^\| \)-g\( \|$\)/ /') -fPIC"
cppflags="$(dpkg-buildflags --get CPPFLAGS)"

log "fetching the sources of abseil $abseil_version, protobuf $protobuf_version, re2" \
  "$re2_version, gflags $gflags_version"
fetch_debian_sources "$work" "abseil=$abseil_version" "protobuf=$protobuf_version" \
  "re2=$re2_version" "gflags=$gflags_version"
out="$work/out"
mkdir -p "$out"

# Abseil: Debian's static build (CMake, C++17, BUILD_SHARED_LIBS=OFF, build type None). Its
# CMake targets are the archives' names without "absl_".
log "building Abseil's archives: ${abseil_archives[*]}"
src="$(find "$work" -maxdepth 1 -type d -name 'abseil-*')"
if ! cmp -s "$src/absl/base/options.h" /usr/include/absl/base/options.h; then
  log "$src/absl/base/options.h differs from the installed one; libabsl-dev and its source disagree"
  exit 1
fi
CXXFLAGS="$cxxflags $cppflags" cmake -S "$src" -B "$work/abseil-build" -G Ninja \
  -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=OFF \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_TESTING=OFF >"$work/abseil.log" 2>&1
ninja -C "$work/abseil-build" -j "$jobs" "${abseil_archives[@]#absl_}" \
  >>"$work/abseil.log" 2>&1 || {
  tail -30 "$work/abseil.log" >&2
  exit 1
}
for archive in "${abseil_archives[@]}"; do
  find "$work/abseil-build" -name "lib$archive.a" -exec cp {} "$out/" \;
done

# Protobuf: Debian builds it with autotools, with its own CXXFLAGS, so in the compiler's default
# C++ (gnu++17) and without NDEBUG; its CMake build compiles the same sources with the same
# definitions (HAVE_PTHREAD, HAVE_ZLIB), once its fixed C++11 is made gnu++17 (in C++17 the
# static constexpr members are inline, as in Debian's archive). Only libprotobuf, not protoc.
log "building libprotobuf.a"
src="$(find "$work" -maxdepth 1 -type d -name 'protobuf-*')"
sed -i -e 's/set(CMAKE_CXX_STANDARD 11)/set(CMAKE_CXX_STANDARD 17)/' \
  -e 's/set(CMAKE_CXX_EXTENSIONS OFF)/set(CMAKE_CXX_EXTENSIONS ON)/' "$src/CMakeLists.txt"
CXXFLAGS="$cxxflags $cppflags" cmake -S "$src" -B "$work/protobuf-build" -G Ninja \
  -DCMAKE_BUILD_TYPE=None -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF \
  -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_BUILD_PROTOC_BINARIES=OFF -Dprotobuf_WITH_ZLIB=ON \
  >"$work/protobuf.log" 2>&1
ninja -C "$work/protobuf-build" -j "$jobs" libprotobuf >>"$work/protobuf.log" 2>&1 || {
  tail -30 "$work/protobuf.log" >&2
  exit 1
}
cp "$work/protobuf-build/libprotobuf.a" "$out/"

# RE2: Debian's Makefile build, its tables generated from Debian's Unicode data, -O3 as
# debian/rules says.
log "building libre2.a"
src="$(find "$work" -maxdepth 1 -type d -name 're2-*')"
make -C "$src" -j "$jobs" REBUILD_TABLES=1 \
  CXXFLAGS="${cxxflags//-O2/-O3} -pthread -Wall -std=c++11" \
  CPPFLAGS="$cppflags" obj/libre2.a >"$work/re2.log" 2>&1 || {
  tail -30 "$work/re2.log" >&2
  exit 1
}
cp "$src/obj/libre2.a" "$out/"

# gflags: Debian's CMake build (Release), the static library alone.
log "building libgflags.a"
src="$(find "$work" -maxdepth 1 -type d -name 'gflags-*')"
CXXFLAGS="$cxxflags $cppflags" cmake -S "$src" -B "$work/gflags-build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DBUILD_STATIC_LIBS=ON -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON >"$work/gflags.log" 2>&1
ninja -C "$work/gflags-build" -j "$jobs" gflags_static >>"$work/gflags.log" 2>&1 || {
  tail -30 "$work/gflags.log" >&2
  exit 1
}
cp "$work/gflags-build/lib/libgflags.a" "$out/"

# Each rebuilt archive defines every symbol Debian's does (the same code), and holds no
# relocation a shared object refuses.
for archive in "$out"/*.a; do
  name="$(basename "$archive")"
  missing="$(comm -23 \
    <(nm --defined-only -g "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/$name" 2>/dev/null |
      awk 'NF == 3 && $2 != "W" && $2 != "V" {print $3}' | sort -u) \
    <(nm --defined-only -g "$archive" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u))"
  if [ -n "$missing" ]; then
    log "$name lacks symbols Debian's defines, e.g. $(echo "$missing" | head -3 | tr '\n' ' ')"
    exit 1
  fi
  if readelf -rW "$archive" |
    grep -qE 'R_X86_64_(TPOFF32|GOTTPOFF|32S) |R_X86_64_PC32 .* std(out|err) '; then
    log "$name still holds relocations for executables only"
    exit 1
  fi
done

mkdir -p "$cache"
rm -rf "$dir"
mv "$out" "$dir"
touch "$dir/complete"
archives=("$dir"/*.a)
log "built ${#archives[@]} archives into $dir"
echo "$dir"
