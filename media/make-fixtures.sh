#!/usr/bin/env bash
# Makes GuardPlay's committed media fixtures with the ffmpeg CLI (Debian 12, FFmpeg 5.1) and qrencode.
# Every source is synthetic (lavfi, and qrencode for the QR code), so the files carry no third-party content.
# Usage: media/make-fixtures.sh [output-dir]   (default: the directory of this script)
set -euo pipefail
out="${1:-$(cd "$(dirname "$0")" && pwd)}"
mkdir -p "$out"
ff=(ffmpeg -hide_banner -loglevel error -y -bitexact)

# A little tune: an arpeggio over A minor, F, C and G (a chord each 2 s, a note each 0.25 s), each note
# decaying, with an octave harmonic and a bass note per chord. The right channel adds a soft bell.
chord='floor(mod(t/2,4))'
note='floor(mod(t*4,4))'
root="(8*eq($chord,1)+3*eq($chord,2)+10*eq($chord,3))"
step="(eq($note,1)*(4-eq($chord,0))+7*eq($note,2)+12*eq($note,3))"
pitch="220*pow(2,($root+$step)/12)"
tune="0.25*sin(2*PI*$pitch*t)*exp(-3*mod(t,0.25))+0.08*sin(4*PI*$pitch*t)*exp(-6*mod(t,0.25))"
tune="$tune+0.15*sin(2*PI*55*pow(2,$root/12)*t)"
# Commas inside a filter option must be escaped for the filtergraph parser.
esc() { printf '%s' "${1//,/\\,}"; }
left="$(esc "$tune")"
right="$(esc "$tune+0.05*sin(2*PI*660*t)*exp(-4*mod(t,0.5))")"

# song.m4a: 10 s of AAC-LC, 44.1 kHz stereo.
"${ff[@]}" -f lavfi -i "aevalsrc=${left}|${right}:s=44100:d=10" -c:a aac -b:a 128k "$out/song.m4a"

# clip.mp4: 10 s of 640x360 H.264 (High, 2 B-frames, 2 s GOP at 30 fps) with 48 kHz stereo AAC.
"${ff[@]}" -f lavfi -i "testsrc2=size=640x360:rate=30:duration=10" \
    -f lavfi -i "aevalsrc=${left}|${right}:s=48000:d=10" \
    -c:v libx264 -preset medium -profile:v high -bf 2 -g 60 -keyint_min 60 -sc_threshold 0 -crf 28 -pix_fmt yuv420p \
    -c:a aac -b:a 96k -shortest -movflags +faststart "$out/clip.mp4"

# video-only.mp4: 4 s of 320x240 H.264, no audio.
"${ff[@]}" -f lavfi -i "testsrc=size=320x240:rate=25:duration=4" \
    -c:v libx264 -preset fast -bf 2 -g 50 -sc_threshold 0 -crf 30 -pix_fmt yuv420p "$out/video-only.mp4"

# voice-22k-mono.mp3: 4 s of 22.05 kHz mono MP3 (a gliding tone).
"${ff[@]}" -f lavfi -i "aevalsrc=0.4*sin(2*PI*(300+100*sin(2*PI*0.5*t))*t):s=22050:d=4" \
    -c:a libmp3lame -b:a 48k "$out/voice-22k-mono.mp3"

# chime-48k.flac: 4 s of 48 kHz stereo FLAC.
"${ff[@]}" -f lavfi -i "aevalsrc=${left}|${right}:s=48000:d=4" -c:a flac "$out/chime-48k.flac"

# chime.opus: 4 s of 48 kHz stereo Opus in Ogg.
"${ff[@]}" -f lavfi -i "aevalsrc=${left}|${right}:s=48000:d=4" -c:a libopus -b:a 64k "$out/chime.opus"

# mono-48k.m4a: 4 s of 48 kHz mono AAC.
"${ff[@]}" -f lavfi -i "aevalsrc=${left}:s=48000:d=4" -c:a aac -b:a 64k "$out/mono-48k.m4a"

# clip-ac3.mp4 and clip-eac3.mp4: 4 s of H.264 with AC-3 / E-AC-3 5.1 audio, for the packager.
for codec in ac3 eac3; do
    "${ff[@]}" -f lavfi -i "testsrc2=size=320x180:rate=25:duration=4" \
        -f lavfi -i "aevalsrc=${left}|${right}|${left}|0.1*sin(2*PI*50*t)|${right}|${left}:s=48000:d=4:c=5.1" \
        -c:v libx264 -preset fast -bf 2 -g 50 -sc_threshold 0 -crf 30 -pix_fmt yuv420p \
        -c:a "$codec" -b:a 192k -shortest "$out/clip-$codec.mp4"
done

# dual-audio.mp4: 4 s of H.264 with two AAC tracks tagged eng and fra.
"${ff[@]}" -f lavfi -i "testsrc2=size=320x180:rate=25:duration=4" \
    -f lavfi -i "aevalsrc=${left}|${right}:s=48000:d=4" \
    -f lavfi -i "aevalsrc=0.3*sin(2*PI*440*t)|0.3*sin(2*PI*550*t):s=48000:d=4" \
    -map 0:v -map 1:a -map 2:a -c:v libx264 -preset fast -bf 2 -g 50 -sc_threshold 0 -crf 30 -pix_fmt yuv420p \
    -c:a aac -b:a 64k -metadata:s:a:0 language=eng -metadata:s:a:1 language=fra -shortest "$out/dual-audio.mp4"

# hevc.mp4, hevc-mkv.mkv and hevc-ts.ts: 3 s of 320x180 HEVC (libx265, Main, 1 s closed GOPs, B-frames, two
# slices a picture with wavefront entry points) and 48 kHz stereo AAC, for the fMP4 packager: one encode,
# copied into MP4 ('hvc1', parameter sets in hvcC), Matroska and MPEG-TS (Annex-B, parameter sets in band).
"${ff[@]}" -f lavfi -i "testsrc2=size=320x180:rate=25:duration=3" \
    -f lavfi -i "aevalsrc=${left}|${right}:s=48000:d=3" \
    -c:v libx265 -preset fast -crf 32 -pix_fmt yuv420p -tag:v hvc1 \
    -x265-params "log-level=error:keyint=25:min-keyint=25:scenecut=0:open-gop=0:bframes=3:slices=2:wpp=1" \
    -c:a aac -b:a 48k -shortest "$out/hevc.mp4"
"${ff[@]}" -i "$out/hevc.mp4" -c copy "$out/hevc-mkv.mkv"
"${ff[@]}" -i "$out/hevc.mp4" -c copy "$out/hevc-ts.ts"

# qr-still.png: a sensitive still for the masking and packaging tests, a real QR code (qrencode, level M,
# 6 px modules, version 6) padded with white to 320x320 gray: an EPC (SEPA credit transfer) payment with
# made-up values. The tests (QRStillTests) expect zbarimg to read exactly this text.
qr_text=$'BCD\n002\n1\nSCT\n\nGuardPlay Test Payee\nXX00GPLY00000000000015\nEUR12.50\n\n\nFixture only - not a real account'
qr_still() {
    printf '%s' "$qr_text" | qrencode --level=M --size=6 --margin=4 --output=- \
        | "${ff[@]}" -f png_pipe -i - -vf "pad=320:320:(ow-iw)/2:(oh-ih)/2:color=white,format=gray" \
            -frames:v 1 "$out/qr-still.png"
}
qr_still
