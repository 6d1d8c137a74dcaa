#!/usr/bin/env bash
# The flicker's presentation under Xvfb: media/qr-still.png flickers in a window (`--flicker --loop 0
# --capture-source none`) for SECONDS, then the player is stopped with SIGINT and its `end` event gives
# the refresh rate the display reported, the rate measured, the presents and the missed vsyncs; the
# player's CPU time over the run comes from /proc/PID/stat. Xvfb has no vsync, so the window paces itself
# on the clock; this measures how well.
#
# Usage: bench/flicker-refresh.sh [rounds (default 3)] [seconds (default 10)]
# PLAYER=path runs that binary instead of building and using the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
seconds="${2:-10}"
work=$(mktemp -d /tmp/guardplay-flicker.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -- "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${PLAYER:-}" ]; then
    swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
    PLAYER=.build/release/guard-play
fi

exec 5>"$work/display"
Xvfb -displayfd 5 -screen 0 800x480x24 -nolisten tcp -br -noreset 2>/dev/null &
pids+=($!)
exec 5>&-
for _ in $(seq 100); do [ -s "$work/display" ] && break; sleep 0.1; done
display=":$(tr -d '\n' <"$work/display")"
ticks=$(getconf CLK_TCK)

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); binary: $PLAYER"
for round in $(seq "$rounds"); do
    DISPLAY="$display" SDL_AUDIODRIVER=dummy "$PLAYER" media/qr-still.png --flicker --loop 0 \
        --capture-source none --status json >"$work/events-$round" 2>"$work/stderr-$round" &
    player=$!
    sleep "$seconds"
    cpu=$(awk '{print $14 + $15}' "/proc/$player/stat")
    kill -INT "$player"
    wait "$player" || true
    end=$(grep '"event":"end"' "$work/events-$round")
    field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" <<<"$end"; }
    printf 'round %s: reported %s Hz, measured %s Hz, %s presents, %s missed vsyncs, CPU %.2f s over %s s\n' \
        "$round" "$(field flicker_refresh_reported_hz)" "$(field flicker_refresh_measured_hz)" \
        "$(field flicker_presents)" "$(field flicker_missed_vsyncs)" "$(bc -l <<<"$cpu / $ticks")" "$seconds"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
