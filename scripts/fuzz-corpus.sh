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
ALL=(json request-bodies http recorder-rules transport-stream h264 hevc audio playlist cmaf config cmaf-verify mpd
    mpd-round-trip package-verify)
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

# Serve config files: the deploy example, and lines of every key, both list spellings, each duration
# unit, the address forms and the store URL.
seed config <deploy/guardplay.conf
conf() { printf "$1" | seed config; }
conf 'listen = [::1]:8443\ndata = /var/lib/gp # state\nkek-file = /etc/gp/kek\nwatermark-key-file = /etc/gp/wm\npublic-url = https://media.example.com/\ncors-origin = *, http://localhost:3000\ninput-root = /srv/in\nimport-root = /srv/a,/srv/b\n'
conf 'session-ttl = 1.5h\nlease = 30\njob-workers = 64\njob-lease = 2m\nthreads = 256\nconnection-limit = 100000\nper-ip-connection-limit = 0\nidle-timeout = 1s\nheader-timeout = 300\nbody-timeout = 3600s\nmax-body = 67108864\ndrain = 0\naudit-retention = 3650d\ntrusted-proxy = 10.0.0.0/8, fd00::/8\nmax-streams = 1\n'
conf 'listen = :0\nstore = postgresql://guard@db.example/guardplay?sslmode=require\n\t# tab, then a comment\r\ncors-origins = https://a.example\n'
conf 'store = sqlite\nlisten = 0.0.0.0:65535\nimport-roots =\n'

# Random valid streams and manifests are made from the bytes: a few fixed patterns start them.
for target in mpd-round-trip package-verify; do
    head -c 64 /dev/zero | seed "$target"
    head -c 512 /dev/zero | tr '\0' '\377' | seed "$target"
    printf "$(printf '\\x%02x' $(seq 0 255))" | seed "$target"
    printf "$(printf '\\x%02x' $(seq 255 -7 0) $(seq 3 11 255) $(seq 1 5 255))" | seed "$target"
done

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
        # cmaf-verify: the init segments, and each first fragment's moof box (its size is its first 4 bytes).
        for init in "$media/fmp4-$scheme"/*init*.mp4; do seed cmaf-verify <"$init"; done
        for segment in "$media/fmp4-$scheme"/*_00000.m4s; do
            head -c "$(od -An -N4 -tu1 "$segment" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')" \
                "$segment" | seed cmaf-verify
        done
        seed mpd <"$media/fmp4-$scheme/manifest.mpd"
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

# MPDs the writer does not make: two Periods, comments, single quotes, character references, H/M durations.
printf '<?xml version="1.0"?>\n<!-- two key periods -->\n<MPD type="static" mediaPresentationDuration="PT1H2M3.5S" minBufferTime="PT6S">\n<Period id="0" start="PT0S"><AdaptationSet id="0" contentType="video" mimeType="video/mp4" lang="en&amp;&#233;&#x1F600;">\n<ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cbcs" cenc:default_KID="00112233-4455-6677-8899-aabbccddeeff"/>\n<ContentProtection schemeIdUri="urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e" value="ClearKey1.0"><dashif:Laurl>https://k.example/?a=1&amp;b=2</dashif:Laurl></ContentProtection>\n<Representation id="v" codecs="avc1.64001f" bandwidth="1000" width="640" height="360" frameRate="29.970"><SegmentTemplate timescale="90000" presentationTimeOffset="0" initialization="v_init.mp4" media="v_$Number%%05d$.m4s" startNumber="0"><SegmentTimeline><S t="0" d="540000" r="2"/><S d="1"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period>\n<Period id="1" start="PT18S"><AdaptationSet id="1" contentType="audio" mimeType="audio/mp4"><Representation id="a" codecs="mp4a.40.2" bandwidth="128000" audioSamplingRate="48000"><AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="2"/><SegmentTemplate timescale='"'"'48000'"'"' presentationTimeOffset="864000" initialization="a.mp4" media="a_$Number%%05d$.m4s" startNumber="0"><SegmentTimeline><S t="864000" d="288000"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period>\n</MPD>\n' | seed mpd

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
