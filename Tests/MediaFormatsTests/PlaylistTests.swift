import Testing

@testable import MediaFormats

@Suite struct PlaylistTests {
    private let key = KeyLine(
        method: "SAMPLE-AES", uri: "https://k.example/v1/keys/abc", iv: Array(0..<16).map { UInt8($0) },
        keyFormat: nil, keyFormatVersions: nil)

    @Test func writesExplicitIVsInUpperCaseHex() {
        #expect(
            key.text
                == "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"https://k.example/v1/keys/abc\",IV=0x000102030405060708090A0B0C0D0E0F"
        )
    }

    @Test func chooseTheMinimumVersionForTheFeatures() {
        var clear = MediaPlaylist()
        clear.entries = [.init(duration: 6, uri: "a.ts", byteRange: nil, key: nil)]
        #expect(clear.minimumVersion == 3)
        var iFrames = clear
        iFrames.iFramesOnly = true
        iFrames.entries[0].byteRange = (376, 0)
        #expect(iFrames.minimumVersion == 4)
        var aes = clear
        aes.entries[0].key = KeyLine(method: "AES-128", uri: "k", iv: [UInt8](repeating: 1, count: 16))
        #expect(aes.minimumVersion == 3)
        var sample = clear
        sample.entries[0].key = key
        #expect(sample.minimumVersion == 5)
    }

    @Test(arguments: [(4.499999, 4), (4.5, 5), (4.56, 5), (6.021333, 6), (0.4, 0)])
    func roundsDurationsToNearestNotDown(_ seconds: Double, _ rounded: Int) {
        #expect(roundedDuration(seconds) == rounded)
        var playlist = MediaPlaylist()
        playlist.entries = [.init(duration: seconds, uri: "a.ts", byteRange: nil, key: nil)]
        #expect(playlist.longestRoundedDuration == rounded)
    }

    @Test func writesAndReadsBackAMediaPlaylist() throws {
        var playlist = MediaPlaylist()
        playlist.iFramesOnly = true
        playlist.entries = [
            .init(duration: 2, uri: "v_00000.ts", byteRange: (7_332, 0), key: key),
            .init(duration: 1.5, uri: "v_00000.ts", byteRange: (8_648, 142_504), key: nil),
        ]
        let text = playlist.render(targetDuration: 2)
        #expect(text.hasPrefix("#EXTM3U\n#EXT-X-VERSION:5\n#EXT-X-TARGETDURATION:2\n"))
        let parsed = try ParsedMediaPlaylist(text, name: "iframes.m3u8")
        #expect(parsed.version == 5 && parsed.targetDuration == 2 && parsed.iFramesOnly && parsed.endList)
        #expect(parsed.independentSegments && parsed.hasDecimalDurations && parsed.unknownTags.isEmpty)
        #expect(parsed.segments.map(\.duration) == [2, 1.5])
        #expect(parsed.segments[1].byteRange! == (8_648, 142_504))
        #expect(parsed.segments[1].key?["IV"] == "0x000102030405060708090A0B0C0D0E0F")
    }

    @Test func readsCRLFPlaylistsAsLFOnes() throws {
        let media = [
            "#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:2", "#EXTINF:2,", "a.ts", "#EXTINF:1.5,", "b.ts",
            "#EXT-X-ENDLIST", "",
        ]
        let lf = try ParsedMediaPlaylist(media.joined(separator: "\n"), name: "lf.m3u8")
        let crlf = try ParsedMediaPlaylist(media.joined(separator: "\r\n"), name: "crlf.m3u8")
        #expect(crlf.segments.map(\.uri) == ["a.ts", "b.ts"] && crlf.segments.map(\.uri) == lf.segments.map(\.uri))
        #expect(
            crlf.segments.map(\.duration) == [2, 1.5] && crlf.version == 3 && crlf.targetDuration == 2 && crlf.endList)
        #expect(crlf.segments.map(\.line) == lf.segments.map(\.line))
        let master = ["#EXTM3U", "#EXT-X-STREAM-INF:BANDWIDTH=1000,CODECS=\"avc1.42c01e\"", "video.m3u8", ""]
        let parsed = try ParsedMasterPlaylist(master.joined(separator: "\r\n"), name: "master.m3u8")
        #expect(parsed.variants.map(\.uri) == ["video.m3u8"])
        #expect(parsed.variants.first?.attributes["BANDWIDTH"] == "1000")
    }

    /// Each segment is read behind the EXT-X-MAP above it; the maps are listed in order, not as unknown tags.
    @Test func readsEachSegmentsMapAndListsTheMaps() throws {
        let text = [
            "#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-MAP:URI=\"a_init.mp4\"", "#EXTINF:1,", "a1.m4s", "#EXTINF:1,",
            "a2.m4s", "#EXT-X-MAP:URI=\"b_init.mp4\"", "#EXTINF:1,", "b1.m4s", "#EXT-X-FOO", "",
        ].joined(separator: "\n")
        let parsed = try ParsedMediaPlaylist(text, name: "p")
        #expect(parsed.segments.map { $0.map?["URI"] } == ["a_init.mp4", "a_init.mp4", "b_init.mp4"])
        #expect(parsed.mapLines.map { $0["URI"] } == ["a_init.mp4", "b_init.mp4"])
        #expect(parsed.unknownTags == ["p line 11: #EXT-X-FOO"])
    }

    @Test func readsAByteRangeWithoutOffsetAsContinuing() throws {
        let text = "#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:100@50\na.ts\n#EXTINF:1,\n#EXT-X-BYTERANGE:30\na.ts\n"
        let parsed = try ParsedMediaPlaylist(text, name: "p")
        #expect(parsed.segments[1].byteRange! == (30, 150))
        #expect(!parsed.hasDecimalDurations)
    }

    @Test(arguments: [
        "video.m3u8", "#EXTM3U\na.ts", "#EXTM3U\n#EXTINF:abc,\na.ts", "#EXTM3U\n#EXT-X-VERSION:5\n#EXT-X-VERSION:5",
        "#EXTM3U\n#EXTINF:1,", "#EXTM3U\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"unclosed", "#EXTM3U\n#EXT-X-BYTERANGE:x@1",
    ])
    func refusesMalformedMediaPlaylists(_ text: String) {
        #expect(throws: FormatError.self) { try ParsedMediaPlaylist(text, name: "bad.m3u8") }
    }

    /// Durations and byte ranges that used to overflow the verifier's arithmetic are refused where they
    /// are read, each with its own reason.
    @Test(arguments: [
        ("#EXTINF:1e300,\na.ts", "is not a decimal number"),
        ("#EXTINF:1e-300,\na.ts", "is not a decimal number"),
        ("#EXTINF:inf,\na.ts", "is not a decimal number"),
        ("#EXTINF:nan,\na.ts", "is not a decimal number"),
        ("#EXTINF:-1,\na.ts", "is not a decimal number"),
        ("#EXTINF:1.2.3,\na.ts", "is not a decimal number"),
        ("#EXTINF:0,\na.ts", "outside 0 (exclusive) to 1000000 seconds"),
        ("#EXTINF:1000000.5,\na.ts", "outside 0 (exclusive) to 1000000 seconds"),
        ("#EXTINF:1" + String(repeating: "0", count: 300) + ",\na.ts", "outside 0 (exclusive) to 1000000 seconds"),
        ("#EXTINF:6,\n#EXT-X-BYTERANGE:9223372036854775807@1\na.ts", "length 9223372036854775807 is outside"),
        ("#EXTINF:6,\n#EXT-X-BYTERANGE:2000000000000000000\na.ts", "length 2000000000000000000 is outside"),
        ("#EXTINF:6,\n#EXT-X-BYTERANGE:99999999999999999999@0\na.ts", "is outside 1 to"),
        ("#EXTINF:6,\n#EXT-X-BYTERANGE:188@9223372036854775807\na.ts", "offset 9223372036854775807 is beyond"),
        ("#EXTINF:6,\n#EXT-X-BYTERANGE:-188@0\na.ts", "bad byte range"),
        ("#EXTINF:6,\n#EXT-X-BYTERANGE:0@0\na.ts", "is outside 1 to"),
        // Each range within the limit, but their end past it: written, or implied by a range without offset.
        ("#EXTINF:6,\n#EXT-X-BYTERANGE:536870912@536870912\na.ts", "ends past 536870912 bytes"),
        (
            "#EXTINF:6,\n#EXT-X-BYTERANGE:536870000@0\na.ts\n#EXTINF:6,\n#EXT-X-BYTERANGE:1000\na.ts",
            "1000@536870000 ends past"
        ),
    ])
    func refusesHostileDurationsAndByteRanges(_ body: String, _ says: String) {
        #expect {
            try ParsedMediaPlaylist("#EXTM3U\n#EXT-X-TARGETDURATION:6\n" + body + "\n", name: "h.m3u8")
        } throws: { error in
            "\(error)".contains(says) && "\(error)".hasPrefix("h.m3u8 line ")
        }
    }

    @Test func acceptsTheLargestDurationAndByteRange() throws {
        let text =
            "#EXTM3U\n#EXTINF:1000000,\n#EXT-X-BYTERANGE:536870912@0\na.ts\n#EXTINF:0.000001,\n"
            + "#EXT-X-BYTERANGE:1@0\nb.ts\n"
        let parsed = try ParsedMediaPlaylist(text, name: "p")
        #expect(parsed.segments.map(\.duration) == [1_000_000, 0.000_001])
        #expect(parsed.segments[0].byteRange! == (536_870_912, 0))
    }

    @Test(arguments: [
        (1e300, Int.max), (-1e300, Int.min), (Double.infinity, Int.max), (Double.nan, 0),
        (9_223_372_036_854_775_807.0, Int.max), (-9_223_372_036_854_775_808.0, Int.min), (12.9, 12), (-12.9, -12),
    ])
    func clampsConversionsOfDerivedNumbers(_ value: Double, _ expected: Int) {
        #expect(clampedInt(value) == expected)
    }

    @Test func roundsAHugeDurationWithoutTrapping() {
        #expect(roundedDuration(1e300) == Int.max)
    }

    @Test func writesAndReadsBackAMasterPlaylist() throws {
        var master = MasterPlaylist()
        master.audioRenditions = [
            .init(groupID: "audio", name: "English", language: "en", isDefault: true, channels: 2, uri: "audio-1.m3u8"),
            .init(groupID: "audio", name: "French", language: "fr", isDefault: false, channels: 2, uri: "audio-2.m3u8"),
        ]
        master.variants = [
            .init(
                bandwidth: 900_000, averageBandwidth: 800_000, codecs: ["avc1.64001e", "mp4a.40.2"],
                resolution: (640, 360), frameRate: 29.97, audioGroup: "audio", uri: "video.m3u8")
        ]
        master.iFrameVariants = [
            .init(
                bandwidth: 90_000, averageBandwidth: 80_000, codecs: ["avc1.64001e"], resolution: (640, 360),
                uri: "iframes.m3u8")
        ]
        let parsed = try ParsedMasterPlaylist(master.render(), name: "master.m3u8")
        #expect(parsed.version == nil && parsed.independentSegments)
        #expect(parsed.media.map { $0["LANGUAGE"] } == ["en", "fr"])
        #expect(parsed.variants.first?.attributes["FRAME-RATE"] == "29.970")
        #expect(parsed.variants.first?.attributes["CODECS"] == "avc1.64001e,mp4a.40.2")
        #expect(parsed.iFrameVariants.first?["URI"] == "iframes.m3u8")
    }
}
