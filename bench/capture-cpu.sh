#!/usr/bin/env bash
# CPU cost of the process scanner, side by side: the player plays media/song.m4a in real time to
# `--output null` for SECONDS with `--capture-source none` (the reference: decoding alone), then with
# `--capture-source process --new-process-poll off` (the 250 ms scan alone, today's setting), then with
# `--capture-source process --new-process-poll QUICK` (the scan plus the newest-PID reading). Each run's CPU time is the sum
# of its threads' `/proc/PID/task/TID/schedstat` run time; the scanner's cost is the difference to the
# reference. A fourth run, `--capture-source remote-desktop`, gives the remote-desktop watcher's cost
# (a walk of `/proc/*/comm` every interval). With `busy`, a loop starts `/bin/true` about 50 times a second during every run, as on a
# machine that is compiling, so the quick check has new tasks to look at.
#
# With BASELINE=PATH (another build of guard-play, say main's before a change), the scan alone and the
# scan with that build's default newest-PID poll are measured with it too, in the same run.
#
# Usage: bench/capture-cpu.sh [quiet|busy] [seconds (default 20)] [poll interval (default 250ms)] [QUICK (default 25ms)]
set -euo pipefail
cd "$(dirname "$0")/.."
load="${1:-quiet}"
seconds="${2:-20}"
interval="${3:-250ms}"
quick_interval="${4:-25ms}"

swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
player=.build/release/guard-play

# Nanoseconds of CPU that process PID and its threads have used so far.
cpu_ns() {
    local total=0 ns
    for task in /proc/"$1"/task/*; do
        read -r ns _ <"$task/schedstat" 2>/dev/null || continue
        total=$((total + ns))
    done
    echo "$total"
}

spawner=""
stop_spawner() { if [ -n "$spawner" ]; then kill "$spawner" 2>/dev/null || true; wait "$spawner" 2>/dev/null || true; fi; }
trap stop_spawner EXIT
if [ "$load" = busy ]; then
    (while :; do /bin/true; sleep 0.02; done) &
    spawner=$!
fi

# Prints the player's CPU milliseconds per second of playing with the given capture options (with
# PLAYER set, that build instead).
measure() {
    "${PLAYER:-$player}" media/song.m4a --output null --realtime --loop 0 --status none --poll-interval "$interval" "$@" &
    local pid=$!
    sleep 1
    local before after
    before=$(cpu_ns "$pid")
    sleep "$seconds"
    after=$(cpu_ns "$pid")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    python3 -c "print('%.2f' % (($after - $before) / 1e6 / $seconds))"
}

# Prints the CPU milliseconds per second of the scanner's thread of BUILD playing with
# `--capture-source process` and the given options.
measure_thread() {
    local build=$1
    shift
    "$build" media/song.m4a --output null --realtime --loop 0 --status none --poll-interval "$interval" \
        --capture-source process "$@" &
    local pid=$! tid="" most=-1 reads task
    sleep 1
    for task in /proc/"$pid"/task/*; do
        reads=$(awk '/^syscr/ {print $2}' "$task/io" 2>/dev/null || echo 0)
        if [ "${reads:-0}" -gt "$most" ]; then most=$reads; tid=${task##*/}; fi
    done
    local before after
    read -r before _ <"/proc/$pid/task/$tid/schedstat"
    sleep "$seconds"
    read -r after _ <"/proc/$pid/task/$tid/schedstat"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    python3 -c "print('%.2f' % (($after - $before) / 1e6 / $seconds))"
}

echo "bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $load; ${seconds} s a run; scan every $interval, newest PID every $quick_interval"
# ROUNDS=N with BASELINE: N interleaved rounds of this build's scan alone and default and the
# baseline's scan alone and default, each measured on the scanner's own thread (the thread with the
# most read system calls after a second, `/proc/PID/task/TID/io` syscr: a scan reads two files per
# process), so the decoding's own drift (a few ms/s between runs) stays out; then the medians.
if [ -n "${ROUNDS:-}" ] && [ -n "${BASELINE:-}" ]; then
    rows=""
    for round in $(seq "$ROUNDS"); do
        a=$(measure_thread "$player" --new-process-poll off)
        b=$(measure_thread "$player" --new-process-poll "$quick_interval")
        c=$(measure_thread "$BASELINE" --new-process-poll off)
        d=$(measure_thread "$BASELINE")
        echo "  round $round (load $(cut -d' ' -f1 /proc/loadavg)): scanner thread: this build off $a, default $b; baseline off $c, default $d ms CPU per s"
        rows="$rows $a,$b,$c,$d"
    done
    python3 - $rows <<'EOF2'
import statistics, sys
costs = list(zip(*[[float(v) for v in row.split(",")] for row in sys.argv[1:]]))
names = ["this build, scan alone", "this build, default", "baseline, scan alone", "baseline, default"]
for name, values in zip(names, costs):
    print(f"  {name:<24} median {statistics.median(values):5.2f}  range {min(values):5.2f} to {max(values):5.2f} ms CPU per s")
EOF2
    exit 0
fi
reference=$(measure --capture-source none)
scan=$(measure --capture-source process --new-process-poll off)
quick=$(measure --capture-source process --new-process-poll "$quick_interval")
remote=$(measure --capture-source remote-desktop)
if [ -n "${BASELINE:-}" ]; then
    baseline_scan=$(PLAYER="$BASELINE" measure --capture-source process --new-process-poll off)
    baseline_default=$(PLAYER="$BASELINE" measure --capture-source process)
    echo "  baseline $BASELINE: scan alone $baseline_scan, its default $baseline_default ms CPU per s" \
        "(scanner $(python3 -c "print('%.2f' % ($baseline_scan - $reference))"), $(python3 -c "print('%.2f' % ($baseline_default - $reference))"))"
fi
python3 - "$reference" "$scan" "$quick" "$remote" "$quick_interval" <<'EOF'
import sys
reference, scan, quick, remote = (float(v) for v in sys.argv[1:5])
label = f"process scan + newest PID {sys.argv[5]}"
print(f"  no detector (reference)            {reference:7.2f} ms CPU per s")
print(f"  process scan, quick check off      {scan:7.2f} ms CPU per s   scanner {scan - reference:6.2f}")
print(f"  {label:<34} {quick:7.2f} ms CPU per s   scanner {quick - reference:6.2f}")
print(f"  remote-desktop watcher             {remote:7.2f} ms CPU per s   watcher {remote - reference:6.2f}")
if scan - reference > 0:
    print(f"  scanner cost, new / today: {(quick - reference) / (scan - reference):.2f}x")
EOF
