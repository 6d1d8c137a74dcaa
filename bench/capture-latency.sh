#!/usr/bin/env bash
# Capture-detection latency: how long from a real recorder starting to the player detecting it, showing
# its first masked frame and handing its first muted sample to the sound server. The start of a recorder
# is taken in the recorder's own process just before it execs; the rest comes from the player's JSON
# events (`state` since, `protection` at).
#
# process (default): one player plays media/clip.mp4 in a window on a private Xvfb, its sound on a
#   private PulseAudio, with `--capture-source process`; real recorders start one at a time, alternating
#   `ffmpeg -f x11grab` (screen) and `parec` of the sink's monitor (sound), 1 s each, 1.5 s apart.
# pipewire: one player plays media/song.m4a through SDL's PipeWire backend on a private PipeWire with
#   WirePlumber, with `--capture-source pipewire` only; the recorder is `pw-record` of the sink's monitor.
#
# Usage: bench/capture-latency.sh [process|pipewire] [rounds (default 20)] [poll interval (default 250ms)]
#        [new-process poll (default 25ms, the player's; off for the regular scan alone)]
# KEEP=1 keeps the working folder (events, recorder start times, the player's standard error).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-process}"
rounds="${2:-20}"
interval="${3:-250ms}"
quick="${4:-25ms}"
work=$(mktemp -d /tmp/guardplay-latency.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -- "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "${KEEP:-}" ]; then echo "bench: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
player=.build/release/guard-play

# Only the recorders under test count, whatever else runs on the machine.
ignore() { printf 'ignore %s\n' "$@" >"$work/recorders.conf"; }

# `sh -c "$stamp" _ KIND FILE COMMAND...` notes the time in FILE and execs the recorder in the same
# process, so a background one's $! is the recorder itself.
stamp='echo "$1 $(date +%s.%N)" >>"$2"; shift 2; exec "$@"'
# Runs a recorder (KIND FILE COMMAND...) in the background for a second, then stops it.
record_for_a_second() {
    sh -c "$stamp" _ "$@" &
    local recorder=$!
    sleep 1
    kill "$recorder"
    wait "$recorder" 2>/dev/null || true
}

if [ "$mode" = process ]; then
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
    ignore obs simplescreenrecorder kazam vokoscreen vokoscreenNG peek recordmydesktop gpu-screen-recorder kooha \
        wf-recorder wl-screenrec grim flameshot spectacle gnome-screenshot scrot maim parecord pw-record pacat \
        pw-cat gst-launch-1.0
    DISPLAY="$display" SDL_AUDIODRIVER=pulseaudio "$player" media/clip.mp4 --loop 0 --video-out window \
        --capture-source process --poll-interval "$interval" --new-process-poll "$quick" --recorders "$work/recorders.conf" --status json \
        >"$work/events.jsonl" 2>"$work/player.err" &
    pids+=($!)
    sleep 3
    echo "bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); process scan every $interval, newest PID every $quick; $rounds rounds"
    for round in $(seq "$rounds"); do
        if [ $((round % 2)) -eq 1 ]; then
            sh -c "$stamp" _ screen "$work/starts" ffmpeg -nostdin -v fatal -y -f x11grab -draw_mouse 0 \
                -framerate 30 -video_size 800x480 -t 1 -i "$display" -f null - || true
        else
            record_for_a_second sound "$work/starts" parec --device guardplay_null.monitor --raw "$work/rec.raw"
        fi
        sleep 1.5
    done
else
    # A private PipeWire with WirePlumber on a D-Bus session of its own, and a null sink.
    export XDG_RUNTIME_DIR="$work"
    setsid dbus-run-session -- sh -c 'pipewire & sleep 0.3; exec wireplumber' >/dev/null 2>&1 &
    session=$!
    pids+=("-$session")
    for _ in $(seq 100); do [ -S "$work/pipewire-0" ] && break; sleep 0.1; done
    sleep 1
    pw-cli create-node adapter '{ factory.name=support.null-audio-sink node.name=guardplay-sink
        media.class=Audio/Sink object.linger=true audio.position=[FL FR] }' >/dev/null
    sleep 0.5
    SDL_AUDIODRIVER=pipewire "$player" media/song.m4a --loop 0 --video-out null --capture-source pipewire \
        --status json >"$work/events.jsonl" 2>"$work/player.err" &
    pids+=($!)
    sleep 3
    echo "bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); PipeWire watcher; $rounds rounds"
    for _ in $(seq "$rounds"); do
        record_for_a_second sound "$work/starts" pw-record --target guardplay-sink \
            -P '{ stream.capture.sink=true }' "$work/rec.wav"
        sleep 1.5
    done
fi

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
for kind, label in (("screen", "screen recorder"), ("sound", "sound recorder")):
    if not rows[kind]:
        continue
    print(f"{label}:")
    for index, what in enumerate(("detected", "first masked frame", "first muted sample")):
        values = [r[index] for r in rows[kind]]
        if any(v is not None for v in values):
            print(f"  recorder start → {what:<20}", summary(values))
EOF
