#!/usr/bin/env bash
# Writes the README's watermark figure from a real run: docs/watermark-frame.png (frame 15 of variant A
# of the first segment of media/clip.mp4 packaged with --watermark ab, as a player shows it) and
# docs/watermark-pattern.png (the same frame's decoded A − B, amplified 16× around mid-grey: the
# segment's keyed pattern as it survived the encoder).
#
# Usage: scripts/watermark-figure.sh [path to guard-play (default .build/debug/guard-play)]
set -euo pipefail
cd "$(dirname "$0")/.."
guardplay="${1:-.build/debug/guard-play}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$guardplay" package media/clip.mp4 --out "$work/out" --encryption none --watermark ab \
    --watermark-key 8899aabbccddeeff0011223344556677 --segment-duration 2 --quiet >/dev/null
ff=(ffmpeg -hide_banner -loglevel error -nostdin -y)
"${ff[@]}" -i "$work/out/video_00000.a.ts" -vf "select=eq(n\,15)" -frames:v 1 docs/watermark-frame.png
"${ff[@]}" -i "$work/out/video_00000.a.ts" -i "$work/out/video_00000.b.ts" -filter_complex \
    "[0:v]format=gray,select=eq(n\,15)[a];[1:v]format=gray,select=eq(n\,15)[b];[a][b]blend=all_expr='clip(128+16*(A-B),0,255)'" \
    -frames:v 1 docs/watermark-pattern.png
echo "wrote docs/watermark-frame.png and docs/watermark-pattern.png"
