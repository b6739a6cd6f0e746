#!/usr/bin/env bash
# Builds what breaker ships, optimised, into one directory (default dist/):
#   - a release tarball per program (breakerd, breaker-sidecar, breakerctl) and one of the
#     self-contained client library, each with the Debian runtime packages it needs (DEPENDS);
#   - the Debian packages breakerd, breaker-sidecar, breakerctl, libbreaker-client and
#     libbreaker-client-dev, their Depends computed by dpkg-shlibdeps;
#   - with --image (root, Debian's archive reachable, podman): the container image, made from a
#     Debian 12 root (mmdebstrap) with the packages installed, saved as an archive that
#     `podman load` reads;
#   - SHA256SUMS of all of them.
# Usage: tools/package.sh [--image] [--out=DIR]
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
out="$repo/dist"
image=0
for arg; do
  case "$arg" in
    --image) image=1 ;;
    --out=*) out="$(realpath -m "${arg#--out=}")" ;;
    *) echo "package.sh: unknown argument '$arg'; usage: tools/package.sh [--image] [--out=DIR]" >&2
       exit 2 ;;
  esac
done

version="$(cat packaging/version)"
# Who the packages name as their maintainer: a release pipeline sets its own.
maintainer="${BREAKER_MAINTAINER:-breaker developers <breaker@example.org>}"
arch="$(dpkg --print-architecture)"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out"

# The programs link gRPC, Protobuf, Abseil, glog and SQLite statically (--config=release), and
# cpp-httplib from the archive tools/httplib_archive.sh builds from Debian's source (Debian
# ships none). The client library's objects are built against the shared ones (--config=opt),
# then merged with the static archives themselves: Debian's, and for the shared object the few
# that tools/pic_deps.sh rebuilds position-independent.
# --symlink_prefix=/ leaves the bazel-* links alone; each output is read from its own
# configuration's bazel-bin.
echo "package: cpp-httplib's static archive"
httplib_dir="$(bash tools/httplib_archive.sh)"
echo "package: building the programs (--config=release)"
bazel build --config=release --symlink_prefix=/ "--define=breaker_httplib=$httplib_dir" \
  //:breakerd //:breaker-sidecar //:breakerctl
release_bin="$(bazel info --config=release bazel-bin 2>/dev/null)"
mkdir -p "$work/bin"
for program in service/breakerd sidecar/breaker-sidecar ctl/breakerctl; do
  cp "$release_bin/$program" "$work/bin/"
done
# Debian 13 has no libcpp-httplib0.11: the sidecar must not need it.
if readelf -d "$work/bin/breaker-sidecar" | grep 'NEEDED.*libcpp-httplib' >/dev/null; then
  echo "package: breaker-sidecar needs the shared libcpp-httplib; the release build did not" \
    "link tools/httplib_archive.sh's archive (--define=breaker_httplib=DIR)" >&2
  exit 1
fi
echo "package: the position-independent archives the shared client library needs"
pic_deps="$(bash tools/pic_deps.sh)"
# The self-contained shared object and archive, optimised, and the shared object's tests: it
# needs only libc, libm and the loader, exports the C API alone, passes the C API's tests, and
# works in a program that links Debian's shared gRPC and Protobuf.
echo "package: building and testing the client library (--config=opt)"
client_flags=(--config=opt --symlink_prefix=/ "--define=breaker_pic_deps=$pic_deps")
bazel build "${client_flags[@]}" //packaging:libbreaker_client_so //packaging:libbreaker_client_a
bazel test "${client_flags[@]}" //packaging:self_contained_shared_library_test \
  //packaging:grpc_coexistence_shared_test
opt_bin="$(bazel info --config=opt bazel-bin 2>/dev/null)"
cp "$opt_bin/packaging/self_contained/libbreaker_client.so.1" \
  "$opt_bin/packaging/libbreaker_client.a" "$work/bin/"
chmod u+w "$work"/bin/*
strip --strip-unneeded "$work"/bin/breakerd "$work"/bin/breaker-sidecar "$work"/bin/breakerctl \
  "$work"/bin/libbreaker_client.so.1
strip --strip-debug "$work/bin/libbreaker_client.a"

# pc FILE PREFIX LIBDIR: breaker-client.pc for a prefix.
pc() {
  sed -e "s|@PREFIX@|$2|" -e "s|@LIBDIR@|$3|" -e "s|@VERSION@|$version|" \
    packaging/breaker-client.pc.in >"$1"
}

# shlibs_depends FILE...: the Depends dpkg-shlibdeps computes for the ELF files.
shlibs_depends() {
  mkdir -p "$work/shlibs/debian"
  printf 'Source: breaker\n\nPackage: breaker\nArchitecture: any\n' \
    >"$work/shlibs/debian/control"
  (cd "$work/shlibs" && dpkg-shlibdeps -O "$@" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}

# deb NAME ROOT: builds NAME_VERSION_ARCH.deb from the tree ROOT.
deb() {
  local name="$1" root="$2" elves depends
  mapfile -t elves < <(find "$root" -type f \( -path '*/bin/*' -o -name '*.so.*' \))
  depends=""
  [ ${#elves[@]} -gt 0 ] && depends="$(shlibs_depends "${elves[@]}")"
  mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$name"
  sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SHLIBS@|$depends|" \
    -e "s|@MAINTAINER@|$maintainer|" "packaging/debian/$name.control" >"$root/DEBIAN/control"
  printf 'Installed-Size: %s\n' "$(du -sk --exclude=DEBIAN "$root" | cut -f1)" \
    >>"$root/DEBIAN/control"
  if [ -f "packaging/debian/$name.postinst" ]; then
    install -m 0755 "packaging/debian/$name.postinst" "$root/DEBIAN/postinst"
  fi
  if [ -d "$root/etc" ]; then
    (cd "$root" && find etc -type f | sed 's|^|/|') >"$root/DEBIAN/conffiles"
  fi
  if [ -f "packaging/debian/lintian/$name" ]; then
    install -D -m 0644 "packaging/debian/lintian/$name" \
      "$root/usr/share/lintian/overrides/$name"
  fi
  # A shared library: ldconfig runs after it is installed, and shlibs tells dpkg-shlibdeps
  # which package provides its soname (libbreaker_client.so.1) to packages built against it.
  if find "$root" -name '*.so.*' | grep . >/dev/null; then
    echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"
    echo "libbreaker_client 1 $name (>= $version)" >"$root/DEBIAN/shlibs"
  fi
  install -m 0644 packaging/debian/copyright "$root/usr/share/doc/$name/copyright"
  # A native package's (its version has no Debian revision) changelog is changelog.gz.
  sed -e "s|@NAME@|$name|" -e "s|@VERSION@|$version|" -e "s|@MAINTAINER@|$maintainer|" \
    packaging/debian/changelog | gzip -9n >"$root/usr/share/doc/$name/changelog.gz"
  find "$root" -path "$root/DEBIAN" -prune -o -type d -exec chmod 0755 {} +
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$out/${name}_${version}_${arch}.deb" \
    >/dev/null
  echo "package: ${name}_${version}_${arch}.deb  Depends: $(sed -n 's/^Depends: //p' \
    "$root/DEBIAN/control")"
}

echo "package: Debian packages"
d="$work/deb/breakerd"
install -D -m 0755 "$work/bin/breakerd" "$d/usr/bin/breakerd"
install -D -m 0644 examples/breakerd.textproto "$d/etc/breaker/breakerd.textproto"
install -D -m 0644 packaging/systemd/breakerd.service "$d/lib/systemd/system/breakerd.service"
install -D -m 0644 examples/access.textproto \
  "$d/usr/share/doc/breakerd/examples/access.textproto"
deb breakerd "$d"

d="$work/deb/breaker-sidecar"
install -D -m 0755 "$work/bin/breaker-sidecar" "$d/usr/bin/breaker-sidecar"
install -D -m 0644 examples/sidecar.textproto "$d/etc/breaker/sidecar-example.textproto"
install -D -m 0644 "packaging/systemd/breaker-sidecar@.service" \
  "$d/lib/systemd/system/breaker-sidecar@.service"
deb breaker-sidecar "$d"

d="$work/deb/breakerctl"
install -D -m 0755 "$work/bin/breakerctl" "$d/usr/bin/breakerctl"
deb breakerctl "$d"

d="$work/deb/libbreaker-client"
install -D -m 0644 "$work/bin/libbreaker_client.so.1" "$d/usr/lib/$multiarch/libbreaker_client.so.1"
deb libbreaker-client "$d"

d="$work/deb/libbreaker-client-dev"
install -D -m 0644 client/c_api.h "$d/usr/include/breaker/client/c_api.h"
install -D -m 0644 "$work/bin/libbreaker_client.a" "$d/usr/lib/$multiarch/libbreaker_client.a"
ln -s libbreaker_client.so.1 "$d/usr/lib/$multiarch/libbreaker_client.so"
mkdir -p "$d/usr/lib/$multiarch/pkgconfig"
pc "$d/usr/lib/$multiarch/pkgconfig/breaker-client.pc" /usr "\${prefix}/lib/$multiarch"
# The Go package and the Rust crate, where Debian installs Go and Rust sources: a Go module
# replaces breaker.dev/bindings/go with the directory, and cargo reads the crate from the
# directory of crate sources (its build script links the library pkg-config names).
gocode="$d/usr/share/gocode/src/breaker.dev/bindings/go"
install -D -m 0644 bindings/go/go.mod "$gocode/go.mod"
find bindings/go/breaker -maxdepth 1 -type f \( -name '*.go' -o -name '*.[ch]' \) \
  ! -name '*_test.go' -exec install -D -m 0644 -t "$gocode/breaker" {} +
crate_version="$(sed -n 's/^version = "\(.*\)"$/\1/p' bindings/rust/breaker-client/Cargo.toml)"
crate="$d/usr/share/cargo/registry/breaker-client-$crate_version"
mkdir -p "$crate"
(cd bindings/rust/breaker-client && find Cargo.toml build.rs src tests examples -type f) |
  while read -r file; do
    install -D -m 0644 "bindings/rust/breaker-client/$file" "$crate/$file"
  done
# What cargo's directory sources require; Debian's crates hold the same (no .crate to sum).
echo '{"package":"Could not get crate checksum","files":{}}' >"$crate/.cargo-checksum.json"
deb libbreaker-client-dev "$d"

echo "package: release tarballs"
# tarball NAME: NAME-VERSION-linux-ARCH.tar.gz of $work/tar/NAME, with its DEPENDS.
tarball() {
  local name="$1" dir="$work/tar/$1-$version" elves
  mapfile -t elves < <(find "$dir" -type f \( -path '*/bin/*' -o -name '*.so.*' \))
  {
    echo "# The Debian packages $name needs at run time (dpkg-shlibdeps, Debian 12)."
    if [ ${#elves[@]} -gt 0 ]; then shlibs_depends "${elves[@]}" | tr ',' '\n' | sed 's/^ //'; fi
  } >"$dir/DEPENDS"
  tar -C "$work/tar" --owner=0 --group=0 --sort=name -czf \
    "$out/$name-$version-linux-$arch.tar.gz" "$name-$version"
}
for program in breakerd breaker-sidecar breakerctl; do
  d="$work/tar/$program-$version"
  install -D -m 0755 "$work/bin/$program" "$d/bin/$program"
  case "$program" in
    breakerd)
      install -D -m 0644 examples/breakerd.textproto "$d/etc/breakerd.textproto"
      install -D -m 0644 packaging/systemd/breakerd.service "$d/systemd/breakerd.service" ;;
    breaker-sidecar)
      install -D -m 0644 examples/sidecar.textproto "$d/etc/sidecar.textproto"
      install -D -m 0644 "packaging/systemd/breaker-sidecar@.service" \
        "$d/systemd/breaker-sidecar@.service" ;;
  esac
  tarball "$program"
done
d="$work/tar/libbreaker-client-$version"
install -D -m 0644 client/c_api.h "$d/include/breaker/client/c_api.h"
install -D -m 0644 "$work/bin/libbreaker_client.a" "$d/lib/libbreaker_client.a"
install -m 0644 "$work/bin/libbreaker_client.so.1" "$d/lib/libbreaker_client.so.1"
ln -s libbreaker_client.so.1 "$d/lib/libbreaker_client.so"
mkdir -p "$d/lib/pkgconfig"
# shellcheck disable=SC2016 # pkg-config expands ${pcfiledir}
pc "$d/lib/pkgconfig/breaker-client.pc" '${pcfiledir}/../..' '${prefix}/lib'
tarball libbreaker-client

if [ "$image" -eq 1 ]; then
  echo "package: container image"
  bash packaging/container/build_image.sh "$version" "$out"
fi

(cd "$out" && find . -maxdepth 1 -type f -printf '%f\n' | sort | xargs sha256sum -- \
  >"$work/SHA256SUMS")
mv "$work/SHA256SUMS" "$out/SHA256SUMS"
echo "package: wrote $out:"
ls -1 "$out"
