#!/usr/bin/env bash
# Player benchmark: decode + protect with a schedule active, `guard-play X --fast --output null`, side by
# side with `ffmpeg -i X -f null -` on the same 1080p H.264/AAC file, in one run. Prints both wall times,
# their ratio (goal: guard-play ≤ 1.1× ffmpeg) and the peak RSS of each.
# Usage: bench/player.sh [seconds-of-media (default 90)] [runs (default 7)]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-90}"
runs="${2:-7}"
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

echo "bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); input $(du -h "$input" | cut -f1)"
"$player" "$input" --fast --output null --status json "$schedule" | tail -1

# The two commands alternate, run by run, so a change in background load hits both alike; each run is
# timed by /usr/bin/time, which also reports the peak RSS. Medians are compared.
measure() { /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1; }
$ff_cmd; $gp_cmd  # warm-up: page cache and CPU frequency
: > "$work/player-runs.txt"
for run in $(seq "$runs"); do
    if [ $((run % 2)) -eq 1 ]; then
        echo "ffmpeg $(measure $ff_cmd)" >> "$work/player-runs.txt"
        echo "guard-play $(measure $gp_cmd)" >> "$work/player-runs.txt"
    else
        echo "guard-play $(measure $gp_cmd)" >> "$work/player-runs.txt"
        echo "ffmpeg $(measure $ff_cmd)" >> "$work/player-runs.txt"
    fi
done

python3 - "$work/player-runs.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, wall, rss = line.split()
    runs.setdefault(name, []).append((float(wall), int(rss)))
print(f"\n{'':12} {'median wall (s)':>16} {'min':>7} {'max':>7} {'peak RSS (MiB)':>15}   ({len(runs['ffmpeg'])} runs each, alternating)")
for name in ("ffmpeg", "guard-play"):
    walls = [w for w, _ in runs[name]]
    rss = max(r for _, r in runs[name]) / 1024
    print(f"{name:12} {statistics.median(walls):16.3f} {min(walls):7.3f} {max(walls):7.3f} {rss:15.0f}")
ratio = statistics.median(w for w, _ in runs["guard-play"]) / statistics.median(w for w, _ in runs["ffmpeg"])
print(f"ratio guard-play/ffmpeg (medians): {ratio:.3f} (goal <= 1.1)")
fastest = min(w for w, _ in runs["guard-play"]) / min(w for w, _ in runs["ffmpeg"])
print(f"ratio guard-play/ffmpeg (fastest runs, least disturbed by other load): {fastest:.3f}")
PY
