#!/usr/bin/env bash
# Capture-detection latency: how long from a real recorder starting to the player detecting it, showing
# its first masked frame and handing its first muted sample to the sound server. One player plays
# media/clip.mp4 in a window on a private Xvfb, with its sound on a private PulseAudio; the script then
# starts real recorders one at a time, alternating `ffmpeg -f x11grab` (screen) and `parec` of the sink's
# monitor (sound), each for 1 s with 1.5 s between them, and reads the player's JSON events.
# The start of a recorder is taken in the recorder's own process just before it execs.
# Usage: bench/capture-latency.sh [rounds (default 20)] [poll interval (default 250ms)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-20}"
interval="${2:-250ms}"
work=$(mktemp -d /tmp/guardplay-latency.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
player=.build/release/guard-play

# A private X server on a free display, and a private sound server with one null sink.
Xvfb -displayfd 3 -screen 0 800x480x24 -nolisten tcp -br -noreset 3>"$work/display" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/display" ] && break; sleep 0.1; done
display=":$(head -1 "$work/display")"
HOME="$work" XDG_RUNTIME_DIR="$work" XDG_CONFIG_HOME="$work" PULSE_SERVER="" \
    pulseaudio --daemonize=no --exit-idle-time=-1 --system=false -n --use-pid-file=false --disable-shm=yes \
    --load="module-null-sink sink_name=guardplay_null" \
    --load="module-native-protocol-unix socket=$work/native auth-anonymous=1" 2>/dev/null &
pids+=($!)
export PULSE_SERVER="unix:$work/native"
for _ in $(seq 100); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done

# Only the two recorders under test count, whatever else runs on the machine.
printf 'ignore %s\n' obs simplescreenrecorder kazam vokoscreen vokoscreenNG peek recordmydesktop \
    gpu-screen-recorder kooha wf-recorder wl-screenrec grim flameshot spectacle gnome-screenshot scrot maim \
    parecord pw-record pacat pw-cat gst-launch-1.0 >"$work/recorders.conf"

DISPLAY="$display" SDL_AUDIODRIVER=pulseaudio "$player" media/clip.mp4 --loop 0 --video-out window \
    --capture-source process --poll-interval "$interval" --recorders "$work/recorders.conf" --status json \
    >"$work/events.jsonl" 2>"$work/player.err" &
pids+=($!)
sleep 3

echo "bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); poll interval $interval; $rounds rounds"
: >"$work/starts"
for round in $(seq "$rounds"); do
    if [ $((round % 2)) -eq 1 ]; then
        sh -c 'echo "screen $(date +%s.%N)" >>"$1"; shift; exec "$@"' _ "$work/starts" \
            ffmpeg -nostdin -v fatal -y -f x11grab -draw_mouse 0 -framerate 30 -video_size 800x480 -t 1 \
            -i "$display" -f null - || true
    else
        sh -c 'echo "sound $(date +%s.%N)" >>"$1"; shift; exec "$@"' _ "$work/starts" \
            parec --device guardplay_null.monitor --raw "$work/rec.raw" &
        recorder=$!
        sleep 1
        kill "$recorder"
        wait "$recorder" 2>/dev/null || true
    fi
    sleep 1.5
done

python3 - "$work/starts" "$work/events.jsonl" <<'EOF'
import json, statistics, sys
starts = [line.split() for line in open(sys.argv[1])]
events = [json.loads(line) for line in open(sys.argv[2]) if line.startswith("{")]
def first(after, predicate, key):
    times = [e[key] for e in events if predicate(e) and e[key] >= after - 0.05]
    return min(times) - after if times else None
rows = {"screen": [], "sound": []}
for kind, start in starts:
    t0 = float(start)
    detected = first(t0, lambda e: e["event"] == "state" and e["state"] == "capturing", "since")
    video = first(t0, lambda e: e["event"] == "protection" and e["output"] == "video" and e["protecting"], "at")
    audio = first(t0, lambda e: e["event"] == "protection" and e["output"] == "audio" and e["protecting"], "at")
    rows[kind].append((detected, video, audio))
def summary(values):
    values = [v * 1000 for v in values if v is not None]
    if not values:
        return "none"
    return "min %4.0f  median %4.0f  max %4.0f ms (n=%d)" % (min(values), statistics.median(values), max(values), len(values))
for kind, label in (("screen", "ffmpeg -f x11grab"), ("sound", "parec of the sink monitor")):
    print(f"{label}:")
    print("  recorder start → detected            ", summary([r[0] for r in rows[kind]]))
    print("  recorder start → first masked frame  ", summary([r[1] for r in rows[kind]]))
    print("  recorder start → first muted sample  ", summary([r[2] for r in rows[kind]]))
EOF
