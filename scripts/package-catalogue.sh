#!/usr/bin/env bash
# The catalogue packaging pipeline: packages every media file in a directory as SAMPLE-AES HLS and
# verifies each output against its source with GuardPlay's own decryptor. This is the step media teams
# copy into their CI (docs/CI.md); .ci/run runs it over media/.
#
# Usage: scripts/package-catalogue.sh [MEDIA_DIR] [OUT_DIR]        (defaults: media, out/catalogue)
#   OUT_DIR/hls/NAME/   the publishable output for MEDIA_DIR/NAME.EXT (no key inside)
#   OUT_DIR/keys/       the keys, mode 0600: upload them to the key server, never publish them
#   OUT_DIR/logs/       package and verify output per file
# Environment:
#   GUARD_PLAY       the guard-play binary (default: guard-play on PATH, else .build/debug/guard-play)
#   PACKAGE_OPTIONS  extra package options, such as "--key-uri https://keys.example.com/v1/keys/{kid}"
# Exits 0 when every file packaged and verified, 1 otherwise, with one summary line per file.
set -uo pipefail
media="${1:-media}"
out="${2:-out/catalogue}"
guardplay="${GUARD_PLAY:-$(command -v guard-play || echo .build/debug/guard-play)}"
read -r -a extra <<<"${PACKAGE_OPTIONS:-}"

if [ ! -d "$media" ]; then
    echo "package-catalogue: no media directory $media" >&2
    exit 2
fi
if [ ! -x "$guardplay" ]; then
    echo "package-catalogue: no guard-play binary at $guardplay (build it, or set GUARD_PLAY)" >&2
    exit 2
fi
mkdir -p "$out/hls" "$out/keys" "$out/logs"
chmod 700 "$out/keys"

failures=0
total=0
printf '%-28s %-9s %s\n' file result detail
for file in "$media"/*; do
    [ -f "$file" ] || continue
    case "$file" in *.sh | *.md | *.txt | *.json) continue ;; esac
    total=$((total + 1))
    base="$(basename "$file")"
    name="${base%.*}"
    log="$out/logs/$name"
    if "$guardplay" package "$file" --out "$out/hls/$name" --key-file "$out/keys/$name.key" --force --quiet \
        "${extra[@]}" >"$log.package.txt" 2>"$log.package.err"; then
        "$guardplay" verify "$out/hls/$name" --source "$file" --key-file "$out/keys/$name.key" \
            >"$log.verify.txt" 2>&1
        status=$?
        if [ "$status" -eq 0 ]; then
            printf '%-28s %-9s %s\n' "$base" ok "$(tail -n 1 "$log.verify.txt")"
        else
            failures=$((failures + 1))
            printf '%-28s %-9s %s\n' "$base" FAILED "verify exit $status: $(grep -m 1 -E 'problem|mismatch|FAILED' "$log.verify.txt")"
        fi
    else
        status=$?
        failures=$((failures + 1))
        printf '%-28s %-9s %s\n' "$base" FAILED "package exit $status: $(head -n 1 "$log.package.err")"
    fi
done
echo "package-catalogue: $((total - failures)) of $total files packaged and verified; outputs in $out/hls"
[ "$failures" -eq 0 ]
