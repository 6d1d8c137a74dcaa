# GuardPlay. `make run` installs what is missing, builds and plays the demo; `make test` runs the tests.
SWIFT      ?= swift
SWIFTFLAGS ?= -Xswiftc -warnings-as-errors
BIN        := .build/debug/guard-play
RELEASE    := .build/release/guard-play

.PHONY: setup build release run test lint format fixtures catalogue bench-package clean

setup:
	@scripts/setup.sh

build: setup
	$(SWIFT) build $(SWIFTFLAGS)

release: setup
	$(SWIFT) build -c release $(SWIFTFLAGS)

# The demo: the clip plays (on the sound card if there is one, otherwise paced in real time with no
# device) while a simulated screen recording switches on and off every 3 seconds.
run: build
	$(BIN) media/clip.mp4 --simulate-recording=every:3

lint:
	$(SWIFT) format lint --strict -r Sources Tests Package.swift

format:
	$(SWIFT) format format -i -r Sources Tests Package.swift

test: setup lint
	$(SWIFT) build $(SWIFTFLAGS) --build-tests
	$(SWIFT) test $(SWIFTFLAGS) --skip-build

fixtures:
	media/make-fixtures.sh

# The CI packaging pipeline: every fixture in media/ packaged as SAMPLE-AES HLS and verified against
# its source (scripts/package-catalogue.sh; docs/CI.md shows media teams how to run it on theirs).
catalogue: build
	GUARD_PLAY=$(BIN) scripts/package-catalogue.sh media out/catalogue

# The packager benchmark beside FFmpeg (bench/package.sh; results in docs/PERFORMANCE.md).
bench-package: setup
	bench/package.sh

clean:
	rm -rf .build
