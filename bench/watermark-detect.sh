#!/usr/bin/env bash
# Watermark detection benchmark: `guard-play watermark detect` on a 5-minute 720p copy of a session's
# stream, beside a plain `ffmpeg -i COPY -f null -` decode of the same copy as the reference. The goal
# (issue 14): detection runs faster than real time on 2 cores, that is in under 300 s.
#
# The copy is made as a leak would be: a gateway packages the input through a packaging job with
# "watermark": "ab" and 2-second segments, 1000 sessions of the asset are created, and FFmpeg fetches the
# first session's stream through the gateway (decrypting it) and re-encodes it (libx264, CRF 23, 720p,
# no audio). The gateway is stopped before the timed runs; the detector reads its store and keys.
#
# Prints the median wall time of RUNS interleaved runs of each, the detector's ratio to real time and to
# the decode, the load average, and the detector's JSON (which must name the first session). Then, once
# and untimed, the collusion attack: the first and second sessions' streams averaged picture by picture
# and re-encoded the same way; what the detector says of that copy (it must not name a third session).
# The input is generated once into bench/work/ (gitignored): DURATION s (300) of 1280×720 at 30 fps
# (testsrc2, libx264 at CRF 16) with AAC; the gateway's data and the copy are made afresh each run.
#
# Usage: bench/watermark-detect.sh     (RUNS=3, DURATION=300); run it under the build lock on a shared machine
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
runs="${RUNS:-3}"
duration="${DURATION:-300}"
sessions="${SESSIONS:-1000}"
work=bench/work
mkdir -p "$work"

swift build -c release --product guard-play -Xswiftc -warnings-as-errors >/dev/null
guardplay=$PWD/.build/release/guard-play
if ! "$guardplay" help 2>&1 | grep -q 'watermark detect'; then
    echo "watermark-detect: this build has no 'guard-play watermark detect' (issue 14's detector)" >&2
    exit 2
fi

ff=(ffmpeg -hide_banner -loglevel error -nostdin -y)
input="$work/watermark-720p-${duration}s.mp4"
if [ ! -f "$input" ]; then
    echo "generating a ${duration} s 720p input (once)…" >&2
    "${ff[@]}" -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=$duration" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=$duration" \
        -c:v libx264 -preset veryfast -crf 16 -g 60 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 -shortest "$input"
fi

# Under bench/work, so the input can be hard-linked into the gateway's input root (which takes no
# symbolic links).
run=$(mktemp -d "$work/detect.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$run"
}
trap cleanup EXIT
mkdir -p "$run/inputs" "$run/data"
ln "$input" "$run/inputs/source.mp4"
export GUARDPLAY_KEK=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# The gateway on a port the kernel picks; it prints the address it listens on.
"$guardplay" serve --data "$run/data" --listen 127.0.0.1:0 --input-root "$run/inputs" --drain 0 \
    > "$run/gateway.out" 2> "$run/gateway.err" &
pids+=("$!")
port=""
for _ in $(seq 300); do
    port=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$run/gateway.out" 2>/dev/null | sed 's/.*://' | head -1 || true)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { echo "the gateway did not start: $(cat "$run/gateway.err")" >&2; exit 1; }
base="http://127.0.0.1:$port"
token=$("$guardplay" tokens create --scope admin --data "$run/data" 2>/dev/null)
api() { curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }

echo "packaging the input with \"watermark\": \"ab\" through a job…" >&2
job=$(api -X POST "$base/v1/packaging-jobs" \
    -d '{"input":"source.mp4","asset":"long","watermark":"ab","segmentDuration":2}' | jq -r .id)
state=queued
while [ "$state" = queued ] || [ "$state" = running ]; do
    sleep 1
    state=$(api "$base/v1/packaging-jobs/$job" | jq -r .state)
done
[ "$state" = succeeded ] || { echo "the packaging job $state: $(api "$base/v1/packaging-jobs/$job")" >&2; exit 1; }

echo "creating $sessions sessions…" >&2
first=$(api -X POST "$base/v1/sessions" -d '{"asset":"long"}')
session=$(jq -r .id <<<"$first")
session_token=$(jq -r .token <<<"$first")
second=$(api -X POST "$base/v1/sessions" -d '{"asset":"long"}')
accomplice=$(jq -r .id <<<"$second")
accomplice_token=$(jq -r .token <<<"$second")
for _ in $(seq 3 "$sessions"); do api -X POST "$base/v1/sessions" -d '{"asset":"long"}' >/dev/null; done

echo "fetching sessions $session's and $accomplice's streams through the gateway, then re-encoding…" >&2
# FFmpeg decrypts the video as it fetches it (it cannot read SAMPLE-AES TS audio renditions, hence -map).
"${ff[@]}" -i "$base/v1/hls/long/master.m3u8?token=$session_token" -map 0:v -c copy "$run/served.ts" 2>>"$run/fetch.log"
"${ff[@]}" -i "$base/v1/hls/long/master.m3u8?token=$accomplice_token" -map 0:v -c copy "$run/accomplice.ts" \
    2>>"$run/fetch.log"
copy="$run/copy.mp4"
"${ff[@]}" -i "$run/served.ts" -an -c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p "$copy"
colluded="$run/colluded.mp4"
"${ff[@]}" -i "$run/served.ts" -i "$run/accomplice.ts" -filter_complex "[0:v][1:v]blend=all_expr='(A+B)/2'" \
    -an -c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p "$colluded"
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()
copy_seconds=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$copy")

detect() { "$guardplay" watermark detect "$copy" --asset long --data "$run/data" --json > "$run/detect.json" || true; }
decode() { "${ff[@]}" -i "$copy" -f null -; }
seconds() { local start end; start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "$end - $start" | bc; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

decode_times=()
detect_times=()
for _ in $(seq "$runs"); do
    decode_times+=("$(seconds decode)")
    detect_times+=("$(seconds detect)")
done
d=$(printf '%s\n' "${decode_times[@]}" | median)
w=$(printf '%s\n' "${detect_times[@]}" | median)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; copy: ${copy_seconds} s of 1280x720"
printf '%-44s %8s s   (runs: %s)\n' "ffmpeg -i copy -f null - (decode)" "$d" "${decode_times[*]}"
printf '%-44s %8s s   (runs: %s)\n' "guard-play watermark detect" "$w" "${detect_times[*]}"
echo "detect / real time: $(echo "scale=3; $w / $copy_seconds" | bc) (goal < 1); detect / decode: $(echo "scale=2; $w / $d" | bc)×"
echo "detector (session $session expected): $(cat "$run/detect.json")"
[ "$(jq -r .session "$run/detect.json")" = "$session" ] || { echo "the detector did not name $session" >&2; exit 1; }

"$guardplay" watermark detect "$colluded" --asset long --data "$run/data" --json > "$run/colluded.json" || true
echo "collusion ($session and $accomplice averaged): $(jq -c '{outcome, session, bestCandidate, runnerUp, segments,
    bitsRead, bitErrorRate, falseMatchProbability, runnerUpBitErrorRate, runnerUpFalseMatchProbability}' \
    "$run/colluded.json")"
named=$(jq -r .session "$run/colluded.json")
[ "$named" = null ] || [ "$named" = "$session" ] || [ "$named" = "$accomplice" ] ||
    { echo "the detector named $named, neither colluder" >&2; exit 1; }
