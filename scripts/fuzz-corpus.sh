#!/usr/bin/env bash
# Makes the fuzz targets' seed corpora, fuzz/corpus/TARGET, from hand-written requests and rule files
# and from media/ fixtures and real packager outputs (docs/FUZZING.md).
#
#   scripts/fuzz-corpus.sh [TARGET...]      every target when none is named
#
# The seeds are written to a scratch directory first. When the target's fuzzer is built (make fuzz,
# into FUZZ_BIN, default .build/fuzz/release) they are minimised into fuzz/corpus/TARGET with
# libFuzzer's -set_cover_merge=1, together with what is already there; otherwise they are copied as
# they are, each named by the SHA-1 of its bytes as libFuzzer names its own.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_BIN=${FUZZ_BIN:-.build/fuzz/release}
ALL=(json request-bodies http recorder-rules transport-stream h264 hevc audio playlist cmaf)
GUARD_PLAY=${GUARD_PLAY:-.build/debug/guard-play}
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=("${ALL[@]}")

SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# seed TARGET: one seed from standard input.
seed() {
    local dir="$SCRATCH/$1" file
    mkdir -p "$dir"
    file=$(mktemp "$dir/seed.XXXXXX")
    cat >"$file"
    mv "$file" "$dir/$(sha1sum "$file" | cut -c1-40)"
}

# Request bodies, as the README and the OpenAPI document show them, and JSON of every kind.
bodies=(
    '{"asset":"clip","ttlSeconds":3600}'
    '{"capturing":true,"seq":7,"observedAt":"2026-01-01T00:00:00.250Z"}'
    '{"capturing":false,"seq":9007199254740991,"observedAt":"2026-01-01T01:00:00+01:00","leaseSeconds":10.5}'
    '{"command":"pause"}'
    '{"input":"media/clip.mp4","asset":"clip","denyKeysWhileCapturing":true}'
    '{"directory":"/srv/packaged/clip","keys":[{"kid":"00112233445566778899aabbccddeeff","key":"0123456789abcdef0123456789ABCDEF","uri":"skd://clip"}],"denyKeysWhileCapturing":false}'
    '{"denyKeysWhileCapturing":true}'
    '{"position":12.5}'
)
json=(
    '[null,true,false,0,-0,1.5e-300,-12345678901234567890,"\u00e9\ud83d\ude00\n\"\\/",{"a":[{}],"b":{}}]'
    '"\u0041\t"'
    '1E+2'
    '{"nested":[[[[[[[[1]]]]]]]]}'
)
for body in "${bodies[@]}"; do
    printf '%s' "$body" | seed request-bodies
    printf '%s' "$body" | seed json
done
for text in "${json[@]}"; do printf '%s' "$text" | seed json; done

# Raw requests for the HTTP hygiene layer and the player control router.
http() { printf "$1" | seed http; }
http 'GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n'
http 'GET /v1/player HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer gp_fuzz\r\nOrigin: https://app.example\r\n\r\n'
http 'POST /v1/player/seek HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer gp_fuzz\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{"position":3.5}'
http 'PUT /v1/player/capture-state?x=1&y=%%41+b HTTP/1.1\r\nHost: h\r\nAuthorization: bearer gp_fuzz\r\nX-Forwarded-For: 203.0.113.9, 10.1.2.3\r\nTransfer-Encoding: chunked\r\n\r\n{"capturing":true,"seq":4,"observedAt":"2026-01-01T00:00:05Z","leaseSeconds":30}'
http 'OPTIONS /v1/player/pause HTTP/1.1\r\nHost: h\r\nOrigin: http://x\r\nAccess-Control-Request-Method: POST\r\n\r\n'
http 'POST /v1/player/pause HTTP/1.0\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n'
http 'GET /v1/openapi.json HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'
http 'DELETE /v1/../player HTTP/1.1\r\nHost: h\r\nBad Name: 1\r\n\r\n'
http 'GET /metrics HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 5\r\n\r\nhello'

# Recorder rule files: the documented grammar, with each keyword.
rules() { printf "$1" | seed recorder-rules; }
rules '# my recorders\nscreen my-recorder\nignore flameshot\n'
rules 'screen rec when-arg --mode=screen confidence 0.7\naudio arecord when-arg -D\n'
rules 'screen ffmpeg when-input x11grab kmsgrab confidence 1\nscreen gst-launch-1.0 when-element ximagesrc\r\nscreenshot shot\t# tab\n'

# Media: a real packager output (SAMPLE-AES TS segments and playlists) from media/clip.mp4, and
# elementary streams cut from the fixtures with ffmpeg. Each seed is cut short: libFuzzer mutates
# small inputs best, and the committed corpus stays small.
media="$SCRATCH/media"
mkdir -p "$media"
if [[ -x "$GUARD_PLAY" ]]; then
    "$GUARD_PLAY" package media/clip.mp4 --out "$media/packaged" >/dev/null
    for segment in "$media"/packaged/*.ts; do head -c $((188 * 128)) "$segment" | seed transport-stream; done
    for playlist in "$media"/packaged/*.m3u8; do seed playlist <"$playlist"; done
    # CMAF: init segments whole, and the head of the first media segments, in both CENC schemes.
    for scheme in sample-aes cenc; do
        "$GUARD_PLAY" package media/clip.mp4 --out "$media/fmp4-$scheme" --container fmp4 --encryption "$scheme" >/dev/null
        for init in "$media/fmp4-$scheme"/*init*.mp4; do seed cmaf <"$init"; done
        for segment in "$media/fmp4-$scheme"/*_00000.m4s; do head -c 6000 "$segment" | seed cmaf; done
    done
else
    echo "fuzz-corpus: $GUARD_PLAY is not built; no packaged seeds (make build first)" >&2
fi
ff() { ffmpeg -v error -y "$@"; }
ff -i media/clip.mp4 -t 1 -c copy -f mpegts "$media/clear.ts" && head -c $((188 * 96)) "$media/clear.ts" | seed transport-stream
ff -i media/clip.mp4 -c:v copy -bsf:v h264_mp4toannexb -frames:v 3 -an -f h264 "$media/clip.h264" \
    && head -c 6000 "$media/clip.h264" | seed h264 && head -c 6000 "$media/clip.h264" | seed cmaf
ff -f lavfi -i testsrc=size=96x64:rate=10 -frames:v 3 -c:v libx265 -x265-params log-level=none -f hevc "$media/test.hevc" \
    && head -c 6000 "$media/test.hevc" | seed hevc
ff -i media/clip.mp4 -vn -c:a copy -f adts "$media/clip.aac" && head -c 2000 "$media/clip.aac" | seed audio
ff -i media/clip-ac3.mp4 -vn -c:a copy -f ac3 "$media/clip.ac3" && head -c 3000 "$media/clip.ac3" | seed audio
ff -i media/clip-eac3.mp4 -vn -c:a copy -f eac3 "$media/clip.eac3" && head -c 3000 "$media/clip.eac3" | seed audio
# An ID3v2.4 tag with the PRIV frame a packed audio segment starts with (HLS §3.4).
printf 'ID3\x04\x00\x00\x00\x00\x00\x3fPRIV\x00\x00\x00\x35\x00\x00com.apple.streaming.transportStreamTimestamp\x00\x00\x00\x00\x00\x00\x01\x5f\x90' | seed audio
printf '#EXTM3U\n#EXT-X-VERSION:5\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,URI="audio.m3u8"\n#EXT-X-STREAM-INF:BANDWIDTH=1280000,AVERAGE-BANDWIDTH=1000000,CODECS="avc1.64001e,mp4a.40.2",RESOLUTION=640x360,FRAME-RATE=29.970,AUDIO="aac"\nvideo.m3u8\n#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="iframes.m3u8"\n' | seed playlist
printf '#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://k",KEYFORMAT="identity",IV=0x00112233445566778899AABBCCDDEEFF\n#EXTINF:6.006,\n#EXT-X-BYTERANGE:1000@0\nseg.ts\n#EXT-X-ENDLIST\n' | seed playlist

for target in "${TARGETS[@]}"; do
    [[ -d "$SCRATCH/$target" ]] || { echo "fuzz-corpus: no seeds for '$target'" >&2; exit 2; }
    mkdir -p "fuzz/corpus/$target"
    fuzzer="$FUZZ_BIN/fuzz-$target"
    if [[ -x "$fuzzer" ]]; then
        merged="$SCRATCH/merged-$target"
        mkdir -p "$merged"
        SWIFT_BACKTRACE=enable=no "$fuzzer" -set_cover_merge=1 -rss_limit_mb=256 -malloc_limit_mb=256 -timeout=1 \
            "$merged" "fuzz/corpus/$target" "$SCRATCH/$target" 2>"$SCRATCH/merge-$target.log" \
            || { cat "$SCRATCH/merge-$target.log" >&2; exit 1; }
        rm -f "fuzz/corpus/$target"/*
        cp "$merged"/* "fuzz/corpus/$target/"
    else
        cp "$SCRATCH/$target"/* "fuzz/corpus/$target/"
    fi
    echo "fuzz/corpus/$target: $(ls "fuzz/corpus/$target" | wc -l) inputs, $(du -sk "fuzz/corpus/$target" | cut -f1) KiB"
done
