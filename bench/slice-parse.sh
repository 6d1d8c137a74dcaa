#!/usr/bin/env bash
# HEVC beside H.264 at the same bit rate: a libx264 and a libx265 encode of the same 1080p30 source at
# 6 Mb/s, video only, side by side, measured two ways:
# - `guard-play package --container fmp4` (6 s segments), with `cbcs` and with `--encryption none` (which
#   still builds every sample and its clear lengths, but encrypts nothing): the time per MB of input;
# - the parse alone: `SliceParseBench` (a target of this package) times the slice-header parse of every
#   VCL NAL unit of each encode's elementary stream against its parameter sets, the clear-length
#   computation packaging does per slice, and prints the time per MB of stream.
# Each prints HEVC's time per MB over H.264's (the goal: at most 1.10), from the median of RUNS
# interleaved runs, with every run's figure and the load average.
# Inputs are made once into bench/work/ (gitignored): 20 s of testsrc2 encoded by each codec at 6 Mb/s
# (2 s GOP, `-preset ultrafast`, one slice per picture), looped to 10 minutes with -c copy; the parse runs
# over the 20 s seed PARSE_LOOPS times (1000 by default: 0.1-0.3 s a run, where 30 loops took 5-13 ms and
# the machine's other load decided the figure).
#
# Usage: bench/slice-parse.sh   (RUNS=3 by default; PARSE_LOOPS=1000 by default; GUARDPLAY=path uses a
# built guard-play instead of building .build/release/guard-play)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
runs="${RUNS:-3}"
parse_loops="${PARSE_LOOPS:-1000}"
work=bench/work
mkdir -p "$work"

if [ -z "${GUARDPLAY:-}" ]; then
    swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
    GUARDPLAY=.build/release/guard-play
fi
swift build -c release --product SliceParseBench -Xswiftc -warnings-as-errors >/dev/null
parser=.build/release/SliceParseBench

ff=(ffmpeg -hide_banner -loglevel error -y)
source_args=(-f lavfi -i "testsrc2=size=1920x1080:rate=30:duration=20")
rate=(-b:v 6M -maxrate 6M -bufsize 12M -g 60 -keyint_min 60 -sc_threshold 0 -pix_fmt yuv420p)
if [ ! -f "$work/slice-h264-seed.mp4" ]; then
    echo "encoding the 20 s H.264 seed (once)…" >&2
    "${ff[@]}" "${source_args[@]}" -c:v libx264 -preset ultrafast "${rate[@]}" -an "$work/slice-h264-seed.mp4"
fi
if [ ! -f "$work/slice-hevc-seed.mp4" ]; then
    echo "encoding the 20 s HEVC seed (once)…" >&2
    "${ff[@]}" "${source_args[@]}" -c:v libx265 -preset ultrafast "${rate[@]}" \
        -x265-params "log-level=error:scenecut=0" -tag:v hvc1 -an "$work/slice-hevc-seed.mp4"
fi
for codec in h264 hevc; do
    if [ ! -f "$work/slice-$codec-seed.$codec" ]; then
        "${ff[@]}" -i "$work/slice-$codec-seed.mp4" -c copy -f "$codec" "$work/slice-$codec-seed.$codec"
    fi
    if [ ! -f "$work/slice-$codec.mp4" ]; then
        "${ff[@]}" -stream_loop 29 -i "$work/slice-$codec-seed.mp4" -c copy -movflags +faststart \
            "$work/slice-$codec.mp4"
    fi
done

key=00112233445566778899aabbccddeeff
iv=0f0e0d0c0b0a09080706050403020100

# Runs one packaging of $1 with encryption $2 once; prints "wall-seconds cpu-seconds".
measure_once() {
    rm -rf "$work/slice-out" "$work/slice-out.key"
    /usr/bin/time -o "$work/time" -f '%e %U %S' "$GUARDPLAY" package "$1" --out "$work/slice-out" --quiet \
        --key "$key" --iv "$iv" --container fmp4 --encryption "$2" >/dev/null 2>&1
    tail -n 1 "$work/time" | awk '{ printf "%s %.2f\n", $1, $2 + $3 }'
}

# Prints the median of column $2 of file $1.
median() { cut -d' ' -f"$2" "$1" | sort -n | sed -n "$(((runs + 1) / 2))p"; }

# VCL NAL units of input $1 (H.264 types 1-5, HEVC types 0-31), from FFmpeg's trace_headers on its
# 20 s seed, times the 30 loops.
vcl_units() {
    local seed=$1 vcl
    case $seed in
    *h264*) vcl='$1 >= 1 && $1 <= 5' ;;
    *) vcl='$1 <= 31' ;;
    esac
    "${ff[@]}" -loglevel trace -i "$seed" -c copy -bsf:v trace_headers -f null - 2>&1 |
        grep -oE '^\[trace_headers @ [^]]*\] nal_unit_type: [0-9]+' | awk '{ print $NF }' |
        awk "$vcl { n++ } END { print n * 30 }"
}

# With `--encryption none` no slice header is parsed and nothing encrypted, so the difference to `cbcs`
# is the clear-length parse and the encryption, the same AES work per MB for both codecs.
for codec in h264 hevc; do : >"$work/slice-$codec.times" && : >"$work/slice-$codec-clear.times"; done
for _ in $(seq "$runs"); do
    for codec in h264 hevc; do
        measure_once "$work/slice-$codec.mp4" sample-aes >>"$work/slice-$codec.times"
        measure_once "$work/slice-$codec.mp4" none >>"$work/slice-$codec-clear.times"
    done
done

printf '%-6s %9s %9s %8s %9s %11s %11s %13s\n' codec "MB" "VCL NALs" "cbcs s" "none s" "cbcs ms/MB" "none ms/MB" "cbcs-none ms/MB"
declare -A figures
for codec in h264 hevc; do
    size=$(stat -c %s "$work/slice-$codec.mp4")
    units=$(vcl_units "$work/slice-$codec-seed.mp4")
    for column in 1 2; do
        cbcs=$(median "$work/slice-$codec.times" "$column")
        clear=$(median "$work/slice-$codec-clear.times" "$column")
        label=$([ "$column" = 1 ] && echo wall || echo cpu)
        awk -v c="$codec $label" -v b="$size" -v n="$units" -v e="$cbcs" -v z="$clear" 'BEGIN {
            printf "%-9s %6.1f %9d %8.2f %9.2f %11.3f %11.3f %13.3f\n", c, b / 1e6, n, e, z, e * 1e9 / b, z * 1e9 / b,
                (e - z) * 1e9 / b }'
        figures[$codec-$label]="$cbcs $clear $size"
    done
done
for label in wall cpu; do
    read -r h_cbcs h_clear h_size <<<"${figures[h264-$label]}"
    read -r e_cbcs e_clear e_size <<<"${figures[hevc-$label]}"
    awk -v l="$label" -v hc="$h_cbcs" -v hz="$h_clear" -v hs="$h_size" -v ec="$e_cbcs" -v ez="$e_clear" -v es="$e_size" 'BEGIN {
        printf "HEVC / H.264 per MB (%s): cbcs packaging %.3f (goal ≤ 1.10), cbcs - none %.3f\n", l,
            (ec / es) / (hc / hs), (hc - hz > 0 ? ((ec - ez) / es) / ((hc - hz) / hs) : 0) }'
done
for codec in h264 hevc; do
    printf '%s runs (wall cpu) cbcs: %s none: %s\n' "$codec" "$(tr '\n' ' ' <"$work/slice-$codec.times")" \
        "$(tr '\n' ' ' <"$work/slice-$codec-clear.times")"
done

# The parse alone: SliceParseBench over each seed's elementary stream PARSE_LOOPS times, the codecs
# taking turns.
for codec in h264 hevc; do : >"$work/slice-$codec.parse"; done
for _ in $(seq "$runs"); do
    for codec in h264 hevc; do "$parser" "$codec" "$work/slice-$codec-seed.$codec" "$parse_loops" >>"$work/slice-$codec.parse"; done
done
printf '\n%-6s %9s %9s %9s %11s %11s\n' codec "VCL NALs" "MB" "parse s" "ns/NAL" "parse ms/MB"
for codec in h264 hevc; do
    line=$(sort -n -k4 "$work/slice-$codec.parse" | sed -n "$(((runs + 1) / 2))p")
    read -r _ units megabytes seconds per_nal per_mb _ <<<"$line"
    printf '%-6s %9d %9.1f %9.4f %11.1f %11.4f\n' "$codec" "$units" "$megabytes" "$seconds" "$per_nal" "$per_mb"
    figures[$codec-parse]=$per_mb
done
awk -v h="${figures[h264-parse]}" -v e="${figures[hevc-parse]}" 'BEGIN {
    printf "HEVC / H.264 slice-header parse time per MB: %.3f (goal ≤ 1.10)\n", e / h }'
for codec in h264 hevc; do
    printf '%s parse runs (s): %s\n' "$codec" "$(cut -d' ' -f4 "$work/slice-$codec.parse" | tr '\n' ' ')"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; median of $runs interleaved runs"
