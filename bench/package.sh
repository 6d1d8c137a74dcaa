#!/usr/bin/env bash
# SAMPLE-AES packaging benchmark: `guard-play package` beside FFmpeg's clear HLS remux and FFmpeg's
# AES-128 HLS, on a 1-minute and a 10-minute 1080p H.264 + AAC file, in one run.
#
# Prints, per input and tool, the median wall time of RUNS interleaved runs, the throughput in MB of
# input per second, the largest peak resident memory of those runs, and the throughput ratio to
# FFmpeg's clear remux (above 1: faster than the remux).
# Inputs are generated once into bench/work/ (gitignored): 20 s of 1080p30 libx264 (2 s GOP, ~6 Mb/s)
# and AAC, looped with -stream_loop and -c copy.
#
# Usage: bench/package.sh            (RUNS=3 by default; RUNS=5 bench/package.sh for more)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
runs="${RUNS:-3}"
work=bench/work
mkdir -p "$work"

swift build -c release --product guard-play >/dev/null
guardplay=.build/release/guard-play

ff=(ffmpeg -hide_banner -loglevel error -y)
if [ ! -f "$work/seed.mp4" ]; then
    echo "generating a 20 s 1080p seed (once)…" >&2
    "${ff[@]}" -f lavfi -i "testsrc2=size=1920x1080:rate=30:duration=20" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=20" \
        -c:v libx264 -preset ultrafast -tune zerolatency -b:v 6M -maxrate 6M -bufsize 12M -g 60 -keyint_min 60 \
        -sc_threshold 0 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 -shortest "$work/seed.mp4"
fi
for minutes in 1 10; do
    if [ ! -f "$work/input-${minutes}min.mp4" ]; then
        "${ff[@]}" -stream_loop $((minutes * 3 - 1)) -i "$work/seed.mp4" -c copy -movflags +faststart \
            "$work/input-${minutes}min.mp4"
    fi
done

key=00112233445566778899aabbccddeeff
iv=0f0e0d0c0b0a09080706050403020100
printf '%s' "$key" | xxd -r -p >"$work/aes.key"
printf 'aes.key\n%s\n%s\n' "$work/aes.key" "$iv" >"$work/keyinfo"

# Runs one command once; prints "seconds peak-rss-kib".
measure_once() {
    rm -rf "$work/out" "$work/out.key"
    mkdir -p "$work/out"
    /usr/bin/time -o "$work/time" -f '%e %M' "$@" >/dev/null 2>&1
    tail -n 1 "$work/time"
}

# Prints the median seconds and the largest RSS of a file of "seconds rss" lines.
summarise() {
    local seconds rss
    seconds=$(cut -d' ' -f1 "$1" | sort -n | sed -n "$(((runs + 1) / 2))p")
    rss=$(cut -d' ' -f2 "$1" | sort -n | tail -n 1)
    printf '%s %s\n' "$seconds" "$rss"
}

printf '%-8s %-34s %8s %9s %9s %7s\n' input tool seconds "MB/s" "RSS MiB" "×remux"
for minutes in 1 10; do
    input="$work/input-${minutes}min.mp4"
    size=$(stat -c %s "$input")
    : >"$work/clear.times"
    : >"$work/aes.times"
    : >"$work/gp.times"
    : >"$work/gp-fmp4.times"
    # The three tools take turns, so a change in the machine's load falls on all of them.
    for _ in $(seq "$runs"); do
        measure_once "${ff[@]}" -i "$input" -c copy -f hls -hls_time 6 -hls_playlist_type vod \
            -hls_segment_filename "$work/out/s%05d.ts" "$work/out/index.m3u8" >>"$work/clear.times"
        measure_once "${ff[@]}" -i "$input" -c copy -f hls -hls_time 6 -hls_playlist_type vod \
            -hls_key_info_file "$work/keyinfo" -hls_segment_filename "$work/out/s%05d.ts" \
            "$work/out/index.m3u8" >>"$work/aes.times"
        measure_once "$guardplay" package "$input" --out "$work/out" --force --quiet --key "$key" --iv "$iv" \
            >>"$work/gp.times"
        measure_once "$guardplay" package "$input" --out "$work/out" --force --quiet --key "$key" --iv "$iv" \
            --container fmp4 >>"$work/gp-fmp4.times"
    done
    read -r clear_s clear_rss < <(summarise "$work/clear.times")
    read -r aes_s aes_rss < <(summarise "$work/aes.times")
    read -r gp_s gp_rss < <(summarise "$work/gp.times")
    read -r fmp4_s fmp4_rss < <(summarise "$work/gp-fmp4.times")
    for row in "ffmpeg -c copy -f hls (clear):$clear_s:$clear_rss" "ffmpeg -f hls AES-128:$aes_s:$aes_rss" \
        "guard-play package SAMPLE-AES:$gp_s:$gp_rss" "guard-play package fmp4 cbcs:$fmp4_s:$fmp4_rss"; do
        IFS=: read -r tool seconds rss <<<"$row"
        awk -v m="${minutes}min" -v t="$tool" -v s="$seconds" -v r="$rss" -v b="$size" -v c="$clear_s" \
            'BEGIN { printf "%-8s %-34s %8.2f %9.1f %9.1f %7.2f\n", m, t, s, b / 1e6 / s, r / 1024, c / s }'
    done
    awk -v ts="$gp_s" -v f="$fmp4_s" 'BEGIN { printf "         fmp4 cbcs / TS SAMPLE-AES time: %.2f\n", f / ts }'
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; median of $runs interleaved runs"
