# GuardPlay. `make run` installs what is missing, builds and plays the demo; `make test` runs the tests.
SWIFT      ?= swift
SWIFTFLAGS ?= -Xswiftc -warnings-as-errors
BIN        := .build/debug/guard-play
RELEASE    := .build/release/guard-play

# schemathesis (PyPI) fuzzes the live gateway in the end-to-end tests; it lives in a venv of Debian's
# python3, made once.
VENV       := .build/venv
SCHEMATHESIS_VERSION := 4.32.5

.PHONY: setup build release run test lint format fixtures catalogue dist bench-package openapi clean

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

test: setup lint $(VENV)/.schemathesis-$(SCHEMATHESIS_VERSION)
	$(SWIFT) build $(SWIFTFLAGS) --build-tests
	$(SWIFT) test $(SWIFTFLAGS) --skip-build

fixtures:
	media/make-fixtures.sh

$(VENV)/.schemathesis-$(SCHEMATHESIS_VERSION):
	/usr/bin/python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check schemathesis==$(SCHEMATHESIS_VERSION)
	touch $@

# Embeds docs/openapi.yaml and docs/openapi-player.yaml in the binary after they change (a test fails while they differ).
openapi:
	scripts/embed-openapi.sh

# The CI packaging pipeline: every fixture in media/ packaged as SAMPLE-AES HLS and verified against
# its source by `guard-play catalogue` (docs/CI.md shows media teams how to run it on theirs).
catalogue: build
	$(BIN) catalogue media --out out/catalogue --force --report out/catalogue-report.json \
		--junit out/catalogue-junit.xml

# Release artefacts in dist/ from the sources as they are: a tarball and a .deb (Depends: derived from
# the binary's NEEDED entries) with a --static-swift-stdlib binary, man page, completions, systemd unit
# and example configurations, and SHA256SUMS (scripts/dist.sh; cached by git tree hash in .build/).
dist: setup
	scripts/dist.sh

# The packager benchmark beside FFmpeg (bench/package.sh; results in docs/PERFORMANCE.md).
bench-package: setup
	bench/package.sh

clean:
	rm -rf .build
