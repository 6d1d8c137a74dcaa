import Foundation
import Testing

/// `manifest.mpd` under `--key-period`, read with no GuardPlay code: Python's `xml.etree` parses it (a
/// Period per key period, each with its own `cenc:default_KID`, Clear Key license URL and init
/// segments, timed as the segments are), every Period's segments are then decrypted by FFmpeg with
/// that period's key (`-decryption_key`) and, in order, give the source's frames; a neighbouring
/// period's key gives none. FFmpeg's dash demuxer handles one Period only (the longest, the last of
/// equals): it opens the rotated MPD and decrypts that Period to the source's frames there.
@Suite(.timeLimit(.minutes(30))) struct DASHRotationTests {
    /// Parses an MPD (argv[1]) and prints its Periods as JSON: start and duration in seconds, and per
    /// adaptation set the protection descriptors, the init segment and the media URLs the
    /// SegmentTemplate and SegmentTimeline give, with each segment's start and duration.
    static let parser = #"""
        import json, re, sys
        import xml.etree.ElementTree as ET
        ns = {"d": "urn:mpeg:dash:schema:mpd:2011", "cenc": "urn:mpeg:cenc:2013", "dashif": "https://dashif.org/"}
        def seconds(text):
            m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", text or "")
            if not m: raise SystemExit("bad duration %r" % text)
            h, mi, s = m.groups()
            return int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)
        root = ET.parse(sys.argv[1]).getroot()
        out = {"type": root.get("type"), "duration": seconds(root.get("mediaPresentationDuration")), "periods": []}
        for period in root.findall("d:Period", ns):
            entry = {"id": period.get("id"), "start": seconds(period.get("start")),
                     "duration": seconds(period.get("duration")) if period.get("duration") else None, "sets": []}
            for aset in period.findall("d:AdaptationSet", ns):
                protection = []
                for cp in aset.findall("d:ContentProtection", ns):
                    laurl = cp.find("dashif:Laurl", ns)
                    protection.append({"scheme": cp.get("schemeIdUri"), "value": cp.get("value"),
                                       "kid": cp.get("{urn:mpeg:cenc:2013}default_KID"),
                                       "laurl": laurl.text if laurl is not None else None})
                rep = aset.find("d:Representation", ns)
                template = rep.find("d:SegmentTemplate", ns)
                number = int(template.get("startNumber", "1"))
                media, times, durations, t = [], [], [], None
                for s in template.find("d:SegmentTimeline", ns).findall("d:S", ns):
                    if s.get("t") is not None: t = int(s.get("t"))
                    d = int(s.get("d"))
                    for _ in range(int(s.get("r", "0")) + 1):
                        name = re.sub(r"\$Number%0(\d+)d\$", lambda m: str(number).zfill(int(m.group(1))),
                                      template.get("media"))
                        media.append(name); times.append(t); durations.append(d)
                        t += d; number += 1
                entry["sets"].append({"contentType": aset.get("contentType"), "id": rep.get("id"),
                                      "protection": protection, "initialization": template.get("initialization"),
                                      "timescale": int(template.get("timescale")),
                                      "pto": int(template.get("presentationTimeOffset", "0")),
                                      "media": media, "times": times, "durations": durations})
            out["periods"].append(entry)
        print(json.dumps(out))
        """#

    struct AdaptationSet: Decodable {
        struct Protection: Decodable {
            var scheme: String
            var value: String?
            var kid: String?
            var laurl: String?
        }
        var contentType: String
        var id: String
        var protection: [Protection]
        var initialization: String
        var timescale: Int
        var pto: Int
        var media: [String]
        var times: [Int]
        var durations: [Int]
    }

    struct Period: Decodable {
        var id: String
        var start: Double
        var duration: Double?
        var sets: [AdaptationSet]
    }

    struct MPD: Decodable {
        var type: String
        var duration: Double
        var periods: [Period]
    }

    static func parse(_ manifest: String) throws -> MPD {
        let parsed = try run("/usr/bin/python3", ["-c", parser, manifest])
        try #require(parsed.status == 0, "the MPD does not parse: \(parsed.stderr)")
        return try JSONDecoder().decode(MPD.self, from: Data(parsed.stdout.utf8))
    }

    /// A key ID as `cenc:default_KID` writes it.
    static func uuid(_ hex: String) -> String {
        let cuts = [0, 8, 12, 16, 20, 32]
        return (0..<5).map { part in
            String(Array(hex)[cuts[part]..<cuts[part + 1]])
        }.joined(separator: "-")
    }

    /// A media playlist's init segments, each with the segments that follow it.
    static func mapGroups(_ playlist: String) throws -> [(map: String, segments: [String])] {
        var groups: [(map: String, segments: [String])] = []
        for line in try String(contentsOfFile: playlist, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("#EXT-X-MAP:URI=\"") {
                groups.append((String(line.dropFirst("#EXT-X-MAP:URI=\"".count).dropLast()), []))
            } else if !line.hasPrefix("#"), !groups.isEmpty {
                groups[groups.count - 1].segments.append(String(line))
            }
        }
        return groups
    }

    /// One Period's adaptation set decrypted by FFmpeg: its init segment and segments concatenated.
    static func decrypted(_ output: String, _ set: AdaptationSet, key: String, into path: String, mayFail: Bool = false)
        throws -> [String]
    {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: output + "/" + set.initialization))
        for name in set.media { bytes += try Data(contentsOf: URL(fileURLWithPath: output + "/" + name)) }
        try bytes.write(to: URL(fileURLWithPath: path))
        let streams = try frameHashes(path, options: ["-decryption_key", key, "-seekable", "0"], mayFail: mayFail)
        return streams.first?.hashes ?? []
    }

    static let license = "https://licenses.example.com/clearkey?asset=clip&v=1"

    @Test(arguments: ["sample-aes", "cenc"])
    func aRotatedPackageHasAPeriodPerKeyPeriodThatDecryptsWithItsKey(_ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(
            fixture("clip.mp4"), output,
            [
                "--container", "fmp4", "--encryption", encryption, "--segment-duration", "2", "--key-period", "1",
                "--key-uri", "../keys/{kid}", "--license-url", Self.license,
            ])
        try #require(result.status == 0, "\(result.stderr)")
        let keys = try KeyRotationTests().keyList(output + ".key")
        try #require(keys.count == 5, "\(keys)")
        let mpd = try Self.parse(output + "/manifest.mpd")
        #expect(mpd.type == "static")
        try #require(mpd.periods.count == keys.count, "\(mpd.periods.map(\.id))")

        // Each Period names its own key: the mp4protection descriptor with the scheme and the period's
        // key ID, and the Clear Key system with the license URL.
        let scheme = encryption == "cenc" ? "cenc" : "cbcs"
        for (index, period) in mpd.periods.enumerated() {
            #expect(period.sets.map(\.contentType) == ["video", "audio"], "period \(index)")
            for set in period.sets {
                let cenc = set.protection.first { $0.scheme == "urn:mpeg:dash:mp4protection:2011" }
                #expect(cenc?.value == scheme && cenc?.kid == Self.uuid(keys[index].kid), "period \(index)")
                let clearKey = set.protection.first { $0.scheme == "urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e" }
                #expect(clearKey?.laurl == Self.license, "period \(index)")
            }
        }

        // The Periods name the init segments and segments the HLS playlists name, key period by key
        // period (an EXT-X-MAP each), in the same order.
        for (track, position) in [("video", 0), ("audio-1", 1)] {
            let groups = try Self.mapGroups(output + "/\(track).m3u8")
            let sets = mpd.periods.map { $0.sets[position] }
            #expect(groups.map(\.map) == sets.map(\.initialization), "\(track)")
            #expect(groups.map(\.segments) == sets.map(\.media), "\(track)")
            // The segments' times run on across the Periods without a gap or an overlap.
            let times = sets.flatMap(\.times)
            let durations = sets.flatMap(\.durations)
            #expect(zip(times.dropFirst(), zip(times, durations)).allSatisfy { $0 == $1.0 + $1.1 }, "\(track)")
        }

        // Each Period starts where its tracks' first segment starts, as Period 0 does (the video's first
        // segment a B-frame delay early, since S@t is its decoding time; video exactly, audio within the
        // tolerance); its duration reaches the next Period's start, and together they last the whole.
        let leads = mpd.periods[0].sets.map { Double($0.times[0] - $0.pto) / Double($0.timescale) }
        #expect(leads.allSatisfy { $0 <= 0 && $0 > -0.2 }, "\(leads)")
        for (index, period) in mpd.periods.enumerated() {
            for (position, set) in period.sets.enumerated() {
                let first = Double(set.times[0] - set.pto) / Double(set.timescale)
                let tolerance = set.contentType == "video" ? 0.0011 : 0.1
                #expect(abs(first - leads[position]) <= tolerance, "period \(index) \(set.id): \(first)")
            }
            let end = index + 1 < mpd.periods.count ? mpd.periods[index + 1].start : mpd.duration
            #expect(abs(period.start + (period.duration ?? -1) - end) < 0.0011, "period \(index)")
        }
        #expect(abs(mpd.periods[0].start) < 0.0001 && abs(mpd.duration - 10.0) < 0.05, "\(mpd.duration)")

        // Played Period by Period, each with its own key, the video is the source's, frame for frame. An
        // AAC decode started mid-stream is not the continuous one (its noise substitution draws from the
        // decoder's running state), so the audio is held to the same segments of an unrotated package
        // under the one key, decoded Period by Period too.
        let control = directory.path("control")
        let packaged = try package(
            fixture("clip.mp4"), control,
            ["--container", "fmp4", "--encryption", encryption, "--segment-duration", "2"])
        try #require(packaged.status == 0, "\(packaged.stderr)")
        let reference = try frameHashes(fixture("clip.mp4"))
        try #require(reference.count == 2)
        var video: [String] = []
        var audio: [String] = []
        var controlAudio: [String] = []
        for (index, period) in mpd.periods.enumerated() {
            video += try Self.decrypted(output, period.sets[0], key: keys[index].key, into: directory.path("v\(index)"))
            audio += try Self.decrypted(output, period.sets[1], key: keys[index].key, into: directory.path("a\(index)"))
            var unrotated = period.sets[1]
            unrotated.initialization = "audio-1_init.mp4"
            controlAudio += try Self.decrypted(control, unrotated, key: testKey, into: directory.path("c\(index)"))
        }
        let videoComparison = FrameComparison(video, reference[0].hashes, offset: 0)
        #expect(videoComparison.decoded == 300 && videoComparison.equal == 300, "\(videoComparison)")
        let audioComparison = FrameComparison(audio, controlAudio, offset: 0)
        #expect(audioComparison.decoded == 470 && audioComparison.equal == 470, "\(audioComparison)")

        // The negative control: Period 1 under Period 2's key gives none of the source's frames.
        let wrong = try Self.decrypted(
            output, mpd.periods[1].sets[0], key: keys[2].key, into: directory.path("wrong"), mayFail: true)
        #expect(FrameComparison(wrong, Array(reference[0].hashes[60..<120]), offset: 0).equal == 0)

        // FFmpeg's dash demuxer opens the rotated MPD and plays the one Period it takes, the last of the
        // longest, with that period's key: the source's frames of that period.
        let chosen = mpd.periods.indices.max { (mpd.periods[$0].duration ?? 0) <= (mpd.periods[$1].duration ?? 0) }!
        let manifest = URL(fileURLWithPath: output + "/manifest.mpd").standardizedFileURL.path
        let played = try frameHashes(manifest, options: ["-cenc_decryption_key", keys[chosen].key])
        let playedVideo = try #require(played.first { $0.mediaType == "video" })
        let firstFrame = chosen * 60
        let periodFrames = Array(reference[0].hashes[firstFrame..<min(firstFrame + 60, 300)])
        let dashComparison = FrameComparison(playedVideo.hashes, periodFrames, offset: 0)
        #expect(
            dashComparison.decoded == periodFrames.count && dashComparison.equal == periodFrames.count,
            "\(dashComparison)")
    }

    /// The control: without rotation the same reading finds one Period under the one key, and its
    /// segments decrypt to every frame.
    @Test func anUnrotatedPackageHasOnePeriod() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(
            fixture("clip.mp4"), output, ["--container", "fmp4", "--segment-duration", "2", "--key-id", testIV])
        try #require(result.status == 0, "\(result.stderr)")
        let mpd = try Self.parse(output + "/manifest.mpd")
        try #require(mpd.periods.count == 1)
        let video = mpd.periods[0].sets[0]
        #expect(video.initialization == "video_init.mp4" && video.media.count == 5)
        #expect(video.protection.first?.kid == Self.uuid(testIV))
        let reference = try frameHashes(fixture("clip.mp4"))
        let decoded = try Self.decrypted(output, video, key: testKey, into: directory.path("video.mp4"))
        let comparison = FrameComparison(decoded, reference[0].hashes, offset: 0)
        #expect(comparison.decoded == 300 && comparison.equal == 300, "\(comparison)")
    }
}

extension DASHRotationTests {
    /// Tracks whose key periods start too far apart get no MPD, and the summary says why: 2-second GOPs
    /// cut into 2-second video segments while the audio is cut every second, so with a new key every
    /// segment the audio's second key period starts a second before the video's.
    @Test func tracksWhoseKeyPeriodsStartApartGetNoMPDAndANotice() throws {
        let directory = try TemporaryDirectory()
        let source = directory.path("source.mp4")
        let made = try ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=6", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=48000:duration=6", "-c:v", "libx264", "-g", "60", "-keyint_min", "60",
            "-sc_threshold", "0", "-c:a", "aac", "-shortest", source,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        let output = directory.path("out")
        let result = try guardPlay([
            "package", source, "--out", output, "--key", testKey, "--container", "fmp4", "--segment-duration", "1",
            "--key-period", "1", "--key-uri", "../keys/{kid}",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let said = result.stdout + result.stderr
        #expect(said.contains("no manifest.mpd: key period 1 of audio-1 starts at 1.0"), "\(said)")
        #expect(!FileManager.default.fileExists(atPath: output + "/manifest.mpd"))
        #expect(FileManager.default.fileExists(atPath: output + "/master.m3u8"))
    }
}
