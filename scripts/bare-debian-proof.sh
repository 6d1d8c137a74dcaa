#!/usr/bin/env bash
# Installs a guard-play .deb into a bare Debian 12 root (scripts/debian-root.sh) with nothing but
# `apt-get install` and runs it there: --version, catalogue over MEDIA, and serve answering /livez on
# loopback (asked by the host's curl; the root shares the host's network). The root is not changed: it
# is the lower layer of an overlay in a mount namespace of this script's own, gone when it exits.
# Usage: scripts/bare-debian-proof.sh ROOT DEB MEDIA PORT        (as root)
set -euo pipefail
root="$1" deb="$2" media="$3" port="$4"
if [ "${BARE_DEBIAN_INSIDE:-}" != 1 ]; then
    exec unshare -m --propagation private env BARE_DEBIAN_INSIDE=1 "$0" "$@"
fi
layers="$(mktemp -d)"
mkdir -p "$layers/upper" "$layers/work" "$layers/merged"
mount -t overlay overlay -o "lowerdir=$root,upperdir=$layers/upper,workdir=$layers/work" "$layers/merged"
system="$layers/merged"
mount -t proc proc "$system/proc"
mount --bind "$root.apt-archives" "$system/var/cache/apt/archives"
cp /etc/resolv.conf "$system/etc/resolv.conf"
cp "$deb" "$system/tmp/guard-play.deb"
mkdir -p "$system/srv/media"
cp -r "$media"/. "$system/srv/media/"
environment=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
inside() { chroot "$system" "${environment[@]}" "$@"; }
server=""
finish() {
    # SIGTERM drains for up to the gateway's drain time; SIGKILL after 10 s at the latest.
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    umount -l "$system/var/cache/apt/archives" "$system/proc" "$system" 2>/dev/null || true
    rm -rf "$layers"
}
trap finish EXIT

echo "== apt-get install /tmp/guard-play.deb"
inside apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 /tmp/guard-play.deb >/dev/null
echo "swift in the root: $(inside sh -c 'ls -d /opt/swift /usr/lib/swift 2>/dev/null | wc -l')"
echo "== guard-play --version"
inside guard-play --version
echo "== guard-play catalogue"
status=0
inside guard-play catalogue /srv/media --out /srv/out --junit /srv/junit.xml || status=$?
echo "catalogue exit $status"
echo "junit: $(grep -m 1 '<testsuites' "$system/srv/junit.xml" || echo none)"
echo "== guard-play serve"
# Started directly, not through a function, so that $! is the server itself (chroot and env exec it),
# the process the exit trap must end.
chroot "$system" "${environment[@]}" guard-play serve --listen "127.0.0.1:$port" --data /srv/data \
    >"$layers/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 200); do
    if body="$(curl -fsS "http://127.0.0.1:$port/livez" 2>/dev/null)"; then
        echo "livez: $body"
        exit 0
    fi
    if ! kill -0 "$server" 2>/dev/null; then break; fi
    sleep 0.05
done
echo "serve did not answer /livez:" >&2
cat "$layers/serve.log" >&2
exit 1
