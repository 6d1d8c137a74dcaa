#!/usr/bin/env bash
# Release artefacts in dist/ (`make dist`): a tarball and a Debian package holding a release binary
# built with --static-swift-stdlib (no Swift toolchain needed to run it), the man page and the bash and
# zsh completions it generates, the systemd units (guardplay.service, and guardplay@.service for several
# nodes on one PostgreSQL) and the example configurations; SHA256SUMS beside them.
#
# The package's Depends: is derived, never kept by hand: each NEEDED entry of the binary's ELF dynamic
# section (readelf -d) is resolved to its file by the dynamic linker's cache, that file to the package
# that installed it (dpkg -S), and the package to `name (>= installed version)`.
#
# Artefacts are cached under .build/dist-cache/TREE, TREE being the git tree hash of the working tree
# (tracked and untracked files, not ignored ones), so a second run on the same sources copies them.
# The release build takes the global build lock unless GUARDPLAY_BUILD_LOCK_HELD=1 says the caller
# holds it already (a test run under `flock ... swift test`).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export PATH="/opt/swift/usr/bin:$PATH"
lock="${GUARDPLAY_BUILD_LOCK:-/tmp/guardplay-build.lock}"

# The working tree's git tree hash, through a throwaway index so the real one is untouched.
index="$(mktemp)"
trap 'rm -f "$index"' EXIT
cp "$(git rev-parse --git-path index)" "$index" 2>/dev/null || rm -f "$index"
GIT_INDEX_FILE="$index" git add -A .
tree="$(GIT_INDEX_FILE="$index" git write-tree)"
cache="$root/.build/dist-cache/$tree"

if [ ! -f "$cache/SHA256SUMS" ]; then
    scratch="$root/.build/dist-build"
    build=(swift build -c release --static-swift-stdlib -Xswiftc -warnings-as-errors --scratch-path "$scratch"
        --product guard-play)
    echo "dist: building the release binary (tree $tree)" >&2
    if [ "${GUARDPLAY_BUILD_LOCK_HELD:-}" = 1 ]; then "${build[@]}" >&2; else flock "$lock" "${build[@]}" >&2; fi
    binary="$scratch/release/guard-play"
    version="$("$binary" --version | sed -n 's/^guard-play //p')"
    [ -n "$version" ] || { echo "dist: $binary --version printed no version" >&2; exit 1; }

    work="$(mktemp -d "$root/.build/dist-work.XXXXXX")"
    trap 'rm -f "$index"; rm -rf "$work"' EXIT
    # The files both artefacts hold, under an install prefix.
    stage() {
        local prefix="$1" docs="$2" unitdir="$3"
        install -D -m 0755 "$binary" "$prefix/bin/guard-play"
        strip --strip-unneeded "$prefix/bin/guard-play"
        install -d "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
            "$prefix/share/zsh/vendor-completions" "$docs/examples/nginx" "$unitdir"
        "$binary" help --man >"$prefix/share/man/man1/guard-play.1"
        "$binary" --completion bash >"$prefix/share/bash-completion/completions/guard-play"
        "$binary" --completion zsh >"$prefix/share/zsh/vendor-completions/_guard-play"
        install -m 0644 deploy/guardplay.conf "$docs/examples/guardplay.conf"
        install -m 0644 deploy/nginx/guardplay.conf "$docs/examples/nginx/guardplay.conf"
        install -m 0644 README.md "$docs/README.md"
        if [ -f LICENSE ]; then install -m 0644 LICENSE "$docs/LICENSE"; fi
        # The units (the single gateway's, and the template for several nodes on one PostgreSQL) name
        # the binary where this layout puts it.
        for unit in guardplay.service guardplay@.service; do
            sed "s|/usr/local/bin/guard-play|$4|g" "deploy/$unit" >"$unitdir/$unit"
            chmod 0644 "$unitdir/$unit"
        done
    }

    # The tarball: a relocatable tree; its unit names /usr/local/bin/guard-play, as deploy/ does.
    name="guard-play-$version-linux-x86_64"
    stage "$work/$name" "$work/$name/share/doc/guard-play" "$work/$name/lib/systemd/system" /usr/local/bin/guard-play
    tar -C "$work" --owner=0 --group=0 --numeric-owner --sort=name -czf "$work/$name.tar.gz" "$name"

    # The Debian package.
    deb="$work/deb"
    stage "$deb/usr" "$deb/usr/share/doc/guard-play" "$deb/lib/systemd/system" /usr/bin/guard-play
    gzip -9n "$deb/usr/share/man/man1/guard-play.1"
    depends="$(scripts/elf-depends.sh "$deb/usr/bin/guard-play")"
    install -d "$deb/DEBIAN"
    cat >"$deb/DEBIAN/control" <<CONTROL
Package: guard-play
Version: $version
Architecture: amd64
Maintainer: GuardPlay <guardplay@example.com>
Section: video
Priority: optional
Installed-Size: $(du -sk --exclude=DEBIAN "$deb" | cut -f1)
Depends: $depends
Description: media player, SAMPLE-AES HLS packager and key gateway with capture protection
 guard-play plays media while muting and masking it during screen capture, packages media as
 SAMPLE-AES HLS and verifies the output (guard-play package, verify, catalogue), and runs a key and
 playback gateway (guard-play serve). The systemd units (guardplay.service, and the template
 guardplay@.service for several nodes on one PostgreSQL) are installed but not enabled: see
 /usr/share/doc/guard-play/examples and guard-play(1).
CONTROL
    dpkg-deb --root-owner-group -Zgzip --build "$deb" "$work/guard-play_${version}_amd64.deb" >&2

    mkdir -p "$cache.partial"
    mv "$work/$name.tar.gz" "$work/guard-play_${version}_amd64.deb" "$cache.partial/"
    (cd "$cache.partial" && sha256sum "$name.tar.gz" "guard-play_${version}_amd64.deb" >SHA256SUMS)
    rm -rf "$cache"
    mv "$cache.partial" "$cache"
else
    echo "dist: reusing the artefacts of tree $tree" >&2
fi

# dist/ holds the artefacts of this tree only, replaced as a whole.
rm -rf dist.partial
cp -a "$cache" dist.partial
rm -rf dist
mv dist.partial dist
ls dist
