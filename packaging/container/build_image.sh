#!/usr/bin/env bash
# Builds the breaker image from Debian 12's archive and the packages in DIST, without a
# registry: mmdebstrap makes the root with the .debs installed, podman builds the Containerfile
# over it, and saves it as DIST/breaker-image-VERSION-ARCH.tar (`podman load -i` reads it).
# The image is also left in podman's store as localhost/breaker:VERSION.
# Usage: packaging/container/build_image.sh VERSION DIST   (as root; tools/package.sh --image)
set -euo pipefail

version="$1"
dist="$(realpath "$2")"
here="$(cd "$(dirname "$0")" && pwd)"
arch="$(dpkg --print-architecture)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

debs=()
for name in breakerd breaker-sidecar breakerctl; do
  debs+=("$dist/${name}_${version}_${arch}.deb")
done
# A Debian 12 root with apt and CA certificates; the three packages copied in and installed with
# what they depend on; docs, manuals and locales left out, apt's lists and caches emptied.
# shellcheck disable=SC2016 # mmdebstrap expands $1 (the root) in the hooks
mmdebstrap --quiet --variant=apt --include=ca-certificates \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='mkdir "$1/tmp/debs"' \
  --customize-hook="copy-in ${debs[*]} /tmp/debs" \
  --customize-hook='chroot "$1" sh -c "apt-get install --yes --quiet --no-install-recommends /tmp/debs/*.deb >/dev/null"' \
  --customize-hook='rm -rf "$1"/tmp/debs "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  bookworm "$work/root.tar"
cp "$here/Containerfile" "$work/"
podman build --quiet --format=docker --tag="localhost/breaker:$version" "$work" >/dev/null
rm -f "$dist/breaker-image-$version-$arch.tar"
podman save --quiet --format=docker-archive --output="$dist/breaker-image-$version-$arch.tar" \
  "localhost/breaker:$version"
echo "image: localhost/breaker:$version, $dist/breaker-image-$version-$arch.tar"
