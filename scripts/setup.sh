#!/usr/bin/env bash
# Installs the Debian packages GuardPlay builds and tests with, only those missing; does nothing when
# all are present. Run as root (CI) or with sudo available.
set -euo pipefail

packages=(
    pkg-config
    # FFmpeg's libraries and CLI (fixtures, second-opinion decoding)
    ffmpeg libavformat-dev libavcodec-dev libavutil-dev libswresample-dev libswscale-dev
    # OpenSSL, libmicrohttpd, SQLite, SDL2
    libssl-dev libmicrohttpd-dev libsqlite3-dev sqlite3 libsdl2-dev
    # PostgreSQL: libpq for the shared store, the server for the store tests' throwaway clusters
    libpq-dev postgresql
    # Test and benchmark peers: a real X display, a sound server, nginx, load generators
    xvfb x11-utils x11-xserver-utils x11-apps imagemagick scrot xdotool pulseaudio pulseaudio-utils nginx wrk hyperfine curl
    python3-venv
    # The benchmarks' own tools: peak RSS from GNU time, hex keys through xxd
    time xxd
    # The gateway's deploy checks: TLS certificates for the nginx test, systemd-analyze for the unit
    openssl systemd
    # strace holds the gateway to the systemd unit's syscall filter (DeployTests)
    strace
    # A private PipeWire with WirePlumber for the detector tests, and tools that act as real recorders
    pipewire pipewire-bin wireplumber dbus gstreamer1.0-pipewire gstreamer1.0-tools gstreamer1.0-plugins-base
    # A real VNC server and viewers for the remote-desktop detector's end-to-end test
    x11vnc xtightvncviewer vncsnapshot
    # The QR fixture: qrencode makes media/qr-still.png, zbarimg reads it back in QRStillTests
    qrencode zbar-tools
    # A real X server with several RandR outputs (Xorg's dummy driver) for the mirror detector's test
    xserver-xorg-core xserver-xorg-video-dummy
    # make dist and its tests: readelf and strip, man-db to render the man page, zsh to load its
    # completion, debootstrap for the bare Debian root the .deb is installed into
    binutils man-db zsh debootstrap
    # The web player's browser tests: Chromium headless, with its Clear Key CDM, driven over DevTools
    chromium
)

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
