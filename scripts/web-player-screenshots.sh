#!/usr/bin/env bash
# Makes the README's pictures of the web player, docs/images/web-player-playing.png and
# docs/images/web-player-masked.png, from a real run: BrowserPlayerTests plays a cbcs asset through
# `guard-play serve` in headless Chromium, reports a capture, and keeps Chromium's own screenshots of
# the page before and after (GUARDPLAY_SCREENSHOTS names where). Nothing is drawn by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/images
swift build -Xswiftc -warnings-as-errors --build-tests
GUARDPLAY_SCREENSHOTS="$PWD/docs/images" swift test --skip-build \
    --filter 'BrowserPlayerTests/aCaptureMasksThePictureAndMutesUntilItClears'
ls -l docs/images/web-player-playing.png docs/images/web-player-masked.png
