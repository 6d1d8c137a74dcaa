#!/usr/bin/env bash
# Player benchmark: decode + protect with a schedule active, `guard-play X --fast --output null`, side by
# side with `ffmpeg -i X -f null -` on the same 1080p H.264/AAC file, in one run. Prints both wall times,
# their ratio (goal: guard-play ≤ 1.1× ffmpeg) and the peak RSS of each.
# Usage: bench/player.sh [seconds-of-media (default 90)] [runs (default 5)]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-90}"
runs="${2:-5}"
work=bench/work
mkdir -p "$work"
input="$work/bench-1080p-${seconds}s.mp4"

if [ ! -s "$input" ]; then
    echo "bench: making $input (${seconds} s of 1080p30 H.264 High + 48 kHz stereo AAC)"
    ffmpeg -hide_banner -loglevel error -y \
        -f lavfi -i "testsrc2=size=1920x1080:rate=30:duration=${seconds}" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=${seconds}" \
        -c:v libx264 -preset veryfast -profile:v high -bf 2 -g 60 -crf 23 -pix_fmt yuv420p \
        -c:a aac -b:a 128k -ac 2 -shortest "$input.tmp.mp4"
    mv "$input.tmp.mp4" "$input"
fi

swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
player=.build/release/guard-play
schedule="--simulate-recording=every:5"

gp_cmd="$player $input --fast --output null --status none $schedule"
ff_cmd="ffmpeg -hide_banner -loglevel error -nostdin -i $input -f null -"

echo "bench: $(nproc) cores; input $(du -h "$input" | cut -f1)"
"$player" "$input" --fast --output null --status json "$schedule" | tail -1

if command -v hyperfine >/dev/null; then
    hyperfine --warmup 1 --runs "$runs" --export-json "$work/player.json" \
        -n ffmpeg "$ff_cmd" -n guard-play "$gp_cmd"
    ratio=$(python3 -c "
import json
r = {x['command']: x for x in json.load(open('$work/player.json'))['results']}
print(f\"{r['guard-play']['mean'] / r['ffmpeg']['mean']:.3f}\")")
    ff_mean=$(python3 -c "import json; r={x['command']: x for x in json.load(open('$work/player.json'))['results']}; print(f\"{r['ffmpeg']['mean']:.3f}\")")
    gp_mean=$(python3 -c "import json; r={x['command']: x for x in json.load(open('$work/player.json'))['results']}; print(f\"{r['guard-play']['mean']:.3f}\")")
else
    t0=$(date +%s.%N); $ff_cmd; t1=$(date +%s.%N); $gp_cmd; t2=$(date +%s.%N)
    ff_mean=$(python3 -c "print(f'{$t1-$t0:.3f}')"); gp_mean=$(python3 -c "print(f'{$t2-$t1:.3f}')")
    ratio=$(python3 -c "print(f'{($t2-$t1)/($t1-$t0):.3f}')")
fi

peak() { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1; }
ff_rss=$(peak $ff_cmd)
gp_rss=$(peak $gp_cmd)

printf '\n%-12s %10s %14s\n' "" "wall (s)" "peak RSS (MiB)"
printf '%-12s %10s %14s\n' ffmpeg "$ff_mean" "$((ff_rss / 1024))"
printf '%-12s %10s %14s\n' guard-play "$gp_mean" "$((gp_rss / 1024))"
echo "ratio guard-play/ffmpeg: $ratio (goal ≤ 1.1)"
