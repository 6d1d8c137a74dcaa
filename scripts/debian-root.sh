#!/usr/bin/env bash
# Makes a minimal Debian 12 root with debootstrap (variant minbase), once: the bare system the .deb is
# installed into by DistTests. Prints its path. The root is built beside its place and renamed into
# it when complete, and never changed afterwards (the test installs into an overlay of it); the
# packages apt downloads there are kept in ROOT.apt-archives, so later runs fetch nothing twice.
# Usage: scripts/debian-root.sh [DIR]      (default .build/debian-12-root)
set -euo pipefail
cd "$(dirname "$0")/.."
root="${1:-$PWD/.build/debian-12-root}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if [ -f "$root/.complete" ]; then
    echo "$root"
    exit 0
fi
command -v debootstrap >/dev/null || { echo "debian-root: debootstrap is not installed (scripts/setup.sh)" >&2; exit 1; }
partial="$root.partial"
rm -rf "$partial"
mkdir -p "$(dirname "$root")" "$root.apt-archives/partial"
echo "debian-root: debootstrap bookworm into $partial from $mirror" >&2
debootstrap --variant=minbase bookworm "$partial" "$mirror" >&2
# Debian 12 as its images ship it: the point-release updates and the security archive beside main
# (the .deb requires the library versions the build machine has, which may come from either).
cat >"$partial/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main
SOURCES
# The package lists, so apt-get install in the root can resolve the .deb's dependencies.
cp /etc/resolv.conf "$partial/etc/resolv.conf"
chroot "$partial" apt-get update -qq >&2
chroot "$partial" apt-get clean
touch "$partial/.complete"
rm -rf "$root"
mv "$partial" "$root"
echo "$root"
