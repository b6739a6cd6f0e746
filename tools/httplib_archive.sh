#!/usr/bin/env bash
# Builds cpp-httplib's library as a static archive, which Debian does not ship, and prints the
# directory that holds it (libcpp-httplib.a).
#
# The release build of breaker-sidecar (--config=release --define=breaker_httplib=DIR) links
# it, so that the package does not depend on libcpp-httplib0.11, which Debian 12 has and
# Debian 13 does not (it has 0.18, another soname and another API).
#
# The archive is built from Debian's own source package (apt-get source, verified against
# Debian's signed index), at the version of libcpp-httplib-dev installed, with Debian's patches
# and Debian's build: meson, the header split into httplib.h and httplib.cc (compiled mode),
# OpenSSL, zlib and Brotli, and debian/rules' flags (dpkg-buildflags with its maintainer
# options, which add -DCPPHTTPLIB_USE_POLL). Only two things differ, both for an archive: no
# link-time optimisation (Debian's -Db_lto=true would leave GCC's intermediate code in the
# archive, for the program's own link to compile), and no -g (the programs ship stripped).
# The split header must be the installed /usr/include/httplib.h, byte for byte, and the archive
# must define every symbol Debian's shared library exports. The result is cached under
# ${XDG_CACHE_HOME:-~/.cache}/breaker/pic-deps/, keyed by the version and this script; a later
# run only prints the directory.
#
# Needs: dpkg-dev (apt-get source), meson, ninja-build, python3 (the split), libcpp-httplib-dev
# and Debian's archive with its sources (deb.debian.org; a private source list, the machine's
# apt configuration is left alone).
# Usage: tools/httplib_archive.sh   (progress on stderr, the directory on stdout)
set -euo pipefail
# shellcheck source=tools/debian_sources.sh
source "$(dirname "$0")/debian_sources.sh"

version="$(dpkg-query -W -f='${source:Version}' libcpp-httplib-dev)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/breaker/pic-deps"
key="cpp-httplib-${version}_recipe-$(sha256sum "$0" | cut -c1-8)"  # this script's
dir="$cache/${key//[^A-Za-z0-9._+-]/_}"
if [ -f "$dir/complete" ]; then
  echo "$dir"
  exit 0
fi

log() { echo "httplib_archive: $*" >&2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

log "fetching the source of cpp-httplib $version"
fetch_debian_sources "$work" "cpp-httplib=$version"
src="$(find "$work" -maxdepth 1 -type d -name 'cpp-httplib-*')"

# debian/rules' flags: its maintainer options, each checked to be still there.
maint_options="hardening=+all optimize=+all,-lto qa=+all"
cppflags_append="-DCPPHTTPLIB_USE_POLL"
for line in "export DEB_BUILD_MAINT_OPTIONS = $maint_options" \
  "export DEB_CPPFLAGS_MAINT_APPEND = $cppflags_append" "-Dcpp-httplib_compile=true \\"; do
  if ! grep -qF -- "$line" "$src/debian/rules"; then
    log "debian/rules of cpp-httplib $version no longer says '$line'; update this script"
    exit 1
  fi
done
buildflags() {
  (cd "$src" && DEB_BUILD_MAINT_OPTIONS="$maint_options" \
    DEB_CPPFLAGS_MAINT_APPEND="$cppflags_append" dpkg-buildflags --get "$1")
}

log "building libcpp-httplib.a"
# dh_auto_configure's meson options (build type plain: the flags are the environment's), with a
# static library in place of the shared one; every feature Debian's build finds, required.
if ! CXXFLAGS="$(buildflags CXXFLAGS | sed 's/\(^\| \)-g\( \|$\)/ /')" \
  CPPFLAGS="$(buildflags CPPFLAGS)" LDFLAGS="$(buildflags LDFLAGS)" \
  meson setup "$work/build" "$src" --buildtype=plain --wrap-mode=nodownload \
  --default-library=static -Db_staticpic=true -Db_lto=false -Dcpp-httplib_compile=true \
  -Dcpp-httplib_test=false -Dcpp-httplib_openssl=enabled -Dcpp-httplib_zlib=enabled \
  -Dcpp-httplib_brotli=enabled >"$work/build.log" 2>&1 ||
  ! ninja -C "$work/build" >>"$work/build.log" 2>&1; then
  tail -30 "$work/build.log" >&2
  exit 1
fi

# The programs compile against the installed header: the split one must be it.
if ! cmp -s "$work/build/httplib.h" /usr/include/httplib.h; then
  log "the split httplib.h differs from /usr/include/httplib.h; libcpp-httplib-dev and its" \
    "source disagree"
  exit 1
fi
archive="$work/build/libcpp-httplib.a"
shared="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libcpp-httplib.so"
missing="$(comm -23 \
  <(nm -D --defined-only "$shared" | awk 'NF == 3 && $2 ~ /^[BDRT]$/ {print $3}' | sort -u) \
  <(nm --defined-only -g "$archive" | awk 'NF == 3 {print $3}' | sort -u))"
if [ -n "$missing" ]; then
  log "libcpp-httplib.a lacks symbols Debian's shared library exports, e.g." \
    "$(echo "$missing" | head -3 | tr '\n' ' ')"
  exit 1
fi

mkdir -p "$cache" "$work/out"
cp "$archive" "$work/out/"
rm -rf "$dir"
mv "$work/out" "$dir"
touch "$dir/complete"
log "built $dir/libcpp-httplib.a"
echo "$dir"
