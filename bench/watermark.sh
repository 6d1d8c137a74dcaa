#!/usr/bin/env bash
# Watermarked packaging benchmark: `guard-play package --watermark ab` (decode once, draw the pattern,
# encode A and B with libx264, package both as SAMPLE-AES TS) beside one plain `ffmpeg -c:v libx264`
# encode of the same input at the same settings (the options of WatermarkProducer.encoderOptions, an
# IDR every segment), in one run. The goal (DESIGN.md): the watermarked run takes at most 2.2× the
# plain encode's wall time.
#
# Prints the median wall time of RUNS interleaved runs of each, and their ratio.
# The input is generated once into bench/work/ (gitignored): 30 s of 1280×720 at 30 fps (testsrc2,
# libx264 at CRF 16) with AAC.
#
# Usage: bench/watermark.sh            (RUNS=3 by default); run it under the build lock on a shared machine
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
runs="${RUNS:-3}"
work=bench/work
mkdir -p "$work"

swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
guardplay=.build/release/guard-play

ff=(ffmpeg -hide_banner -loglevel error -nostdin -y)
input="$work/watermark-720p-30s.mp4"
if [ ! -f "$input" ]; then
    echo "generating a 30 s 720p input (once)…" >&2
    "${ff[@]}" -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=30" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=30" \
        -c:v libx264 -preset veryfast -crf 16 -g 60 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 -shortest "$input"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The same settings as WatermarkProducer.encoderOptions, keyframes at the 6 s segment starts.
plain() {
    "${ff[@]}" -i "$input" -an -c:v libx264 -preset veryfast -crf 18 -threads 4 -forced-idr 1 \
        -x264-params keyint=infinite:scenecut=0:b-adapt=0:bframes=2:open-gop=0 \
        -force_key_frames "expr:gte(t,n_forced*6)" "$out/plain.ts"
}
marked() {
    rm -rf "$out/marked" "$out/marked.key"
    "$guardplay" package "$input" --out "$out/marked" --watermark ab --segment-duration 6 --quiet >/dev/null
}
seconds() { local start end; start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "$end - $start" | bc; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

plain_times=()
marked_times=()
for _ in $(seq "$runs"); do
    plain_times+=("$(seconds plain)")
    marked_times+=("$(seconds marked)")
done
p=$(printf '%s\n' "${plain_times[@]}" | median)
m=$(printf '%s\n' "${marked_times[@]}" | median)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %8s s   (runs: %s)\n' "ffmpeg -c:v libx264 (one plain encode)" "$p" "${plain_times[*]}"
printf '%-44s %8s s   (runs: %s)\n' "guard-play package --watermark ab" "$m" "${marked_times[*]}"
echo "ratio: $(echo "scale=2; $m / $p" | bc)× (goal ≤ 2.2×)"
