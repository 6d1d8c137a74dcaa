import Foundation
import Testing

/// `guard-play verify` must fail, with the right code and a reason, on every kind of damage: the oracle
/// is only worth something if it can say no.
@Suite(.timeLimit(.minutes(30))) struct VerifyTests {
    /// A fresh SAMPLE-AES output of clip.mp4 (key OUT.key), for one test to damage.
    private func packaged(_ directory: TemporaryDirectory, _ name: String = "clip.mp4") throws -> String {
        let output = directory.path("out")
        let result = try package(fixture(name), output, ["--key-uri", "https://keys.example.com/{kid}"])
        #expect(result.status == 0)
        return output
    }

    private func verify(_ output: String, source: String? = fixture("clip.mp4"), key: Bool = true) throws
        -> ProcessResult
    {
        var arguments = ["verify", output]
        if let source { arguments += ["--source", source] }
        if key { arguments += ["--key-file", output + ".key"] }
        return try guardPlay(arguments)
    }

    private func edit(_ path: String, _ change: (String) -> String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try change(text).write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test func passesAnIntactOutputWithAndWithoutTheSource() throws {
        let directory = try TemporaryDirectory()
        let output = try packaged(directory)
        let withSource = try verify(output)
        #expect(withSource.status == 0 && withSource.stdout.contains("equal 300/300"))
        let alone = try verify(output, source: nil)
        #expect(alone.status == 0 && alone.stdout.contains("OK: the output keeps the rules and decrypts"))
    }

    @Test func findsAChangedByteInsideAnEncryptedSlice() throws {
        let directory = try TemporaryDirectory()
        let output = try packaged(directory)
        let path = output + "/video_00001.ts"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // A video packet in the middle of a PES: no unit start, no adaptation field.
        func isPlainVideoPacket(_ offset: Int) -> Bool {
            let pid = UInt16(bytes[offset + 1] & 0x1F) << 8 | UInt16(bytes[offset + 2])
            let unitStart = bytes[offset + 1] & 0x40 != 0
            let adaptation = bytes[offset + 3] & 0x20 != 0
            return pid == 0x100 && !unitStart && !adaptation
        }
        let packet = try #require(stride(from: 188 * 100, to: bytes.count, by: 188).first(where: isPlainVideoPacket))
        bytes[packet + 100] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let result = try verify(output)
        #expect(result.status == 30, "\(result.stdout)")
        #expect(result.stdout.contains("differs from the source"))
    }

    @Test func findsAWrongKey() throws {
        let directory = try TemporaryDirectory()
        let output = try packaged(directory)
        let result = try guardPlay([
            "verify", output, "--source", fixture("clip.mp4"), "--key", "ffeeddccbbaa99887766554433221100",
        ])
        #expect(result.status == 30)
        #expect(result.stdout.contains("mismatch"))
    }

    @Test(arguments: [
        ("video.m3u8", ",IV=0x0F0E0D0C0B0A09080706050403020100", "", "no explicit IV"),
        ("video.m3u8", "#EXT-X-TARGETDURATION:6", "#EXT-X-TARGETDURATION:5", "rounds above TARGETDURATION"),
        ("video.m3u8", "#EXT-X-VERSION:5", "#EXT-X-VERSION:3", "below the 5"),
        ("video.m3u8", "#EXT-X-VERSION:5", "#EXT-X-VERSION:6", "not the minimum"),
        ("video.m3u8", "video_00001.ts", "../video_00001.ts", "not a file inside the output directory"),
        ("video.m3u8", "#EXT-X-INDEPENDENT-SEGMENTS\n", "", "no EXT-X-INDEPENDENT-SEGMENTS"),
        // In a playlist after the first: a first one with EXT-X-MAP makes the output fMP4 to verify.
        (
            "iframes.m3u8", "#EXT-X-I-FRAMES-ONLY\n", "#EXT-X-I-FRAMES-ONLY\n#EXT-X-MAP:URI=\"init.mp4\"\n",
            "EXT-X-MAP, which MPEG-TS"
        ),
        ("iframes.m3u8", "@0\n", "@188\n", "does not start with a PAT"),
        ("master.m3u8", "CODECS=\"avc1.64001e,mp4a.40.2\"", "CODECS=\"avc1.640028,mp4a.40.2\"", "CODECS"),
        ("master.m3u8", "BANDWIDTH=", "BANDWIDTH=1", "BANDWIDTH"),
    ])
    func findsBrokenPlaylistRules(_ file: String, _ original: String, _ replacement: String, _ says: String) throws {
        let directory = try TemporaryDirectory()
        let output = try packaged(directory)
        try edit(output + "/" + file) { text in
            #expect(text.contains(original))
            return text.replacingOccurrences(of: original, with: replacement)
        }
        let result = try verify(output)
        #expect(result.status == 31 || result.status == 30, "\(result.stdout)")
        #expect(result.stdout.contains(says), "\(result.stdout)")
    }

    @Test func findsABrokenContinuityCounterAndATruncatedSegment() throws {
        let directory = try TemporaryDirectory()
        let output = try packaged(directory)
        let path = output + "/video_00000.ts"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[188 * 40 + 3] = (bytes[188 * 40 + 3] & 0xF0) | ((bytes[188 * 40 + 3] &+ 3) & 0x0F)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let result = try verify(output, source: nil)
        #expect(result.status == 31 && result.stdout.contains("continuity counter"), "\(result.stdout)")

        try Data(bytes.dropLast(100)).write(to: URL(fileURLWithPath: path))
        let truncated = try verify(output)
        #expect(truncated.status == 30, "\(truncated.stdout)")
        #expect(truncated.stdout.contains("not whole TS packets"))
    }

    @Test func findsAKeyPublishedInTheOutput() throws {
        let directory = try TemporaryDirectory()
        let output = try packaged(directory)
        try FileManager.default.copyItem(atPath: output + ".key", toPath: output + "/content.bin")
        let result = try verify(output)
        #expect(result.status == 31 && result.stdout.contains("publishes the content key"))
    }

    @Test func survivesHostileFiles() throws {
        let directory = try TemporaryDirectory()
        let output = try packaged(directory)
        try Data(Reference.noise(188 * 20)).write(to: URL(fileURLWithPath: output + "/video_00000.ts"))
        try edit(output + "/iframes.m3u8") {
            $0.replacingOccurrences(of: "#EXT-X-BYTERANGE:", with: "#EXT-X-BYTERANGE:99999999")
        }
        let result = try verify(output)
        #expect(result.status == 30 || result.status == 31)
        #expect(result.stdout.contains("FAILED"))

        try "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"x\"\n/etc/passwd\n".write(
            toFile: output + "/master.m3u8", atomically: true, encoding: .utf8)
        let outside = try verify(output)
        #expect(outside.status == 31 && outside.stdout.contains("not a file inside the output directory"))
        try "not a playlist".write(toFile: output + "/master.m3u8", atomically: true, encoding: .utf8)
        let garbage = try verify(output)
        #expect(garbage.status == 31 && garbage.stdout.contains("#EXTM3U"))
    }

    /// A hand-written output: a master naming one media playlist, and that playlist's `body` after
    /// `#EXTM3U` (the reviewer's inputs, which all used to trap the verifier).
    static let hostilePlaylists: [(name: String, body: String, says: String)] = [
        (
            "byte range near Int.max",
            "#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\n"
                + "#EXT-X-BYTERANGE:9223372036854775807@1\nseg0.ts\n#EXT-X-ENDLIST",
            "byte range length 9223372036854775807 is outside 1 to 536870912 bytes"
        ),
        (
            "EXTINF 1e300", "#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:1e300,\nseg0.ts\n#EXT-X-ENDLIST",
            "EXTINF duration '1e300' is not a decimal number of seconds"
        ),
        (
            "EXTINF 1e300 without TARGETDURATION", "#EXT-X-VERSION:3\n#EXTINF:1e300,\nseg0.ts\n#EXT-X-ENDLIST",
            "EXTINF duration '1e300' is not a decimal number of seconds"
        ),
        (
            "EXTINF of 301 digits",
            "#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:1"
                + String(repeating: "0", count: 300) + ",\nseg0.ts\n#EXT-X-ENDLIST",
            "is outside 0 (exclusive) to 1000000 seconds"
        ),
        (
            "byte range of 2e18 bytes",
            "#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\n"
                + "#EXT-X-BYTERANGE:2000000000000000000\nseg0.ts\n#EXT-X-ENDLIST",
            "byte range length 2000000000000000000 is outside 1 to 536870912 bytes"
        ),
        (
            "EXTINF 1e-300", "#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:1e-300,\nseg0.ts\n#EXT-X-ENDLIST",
            "EXTINF duration '1e-300' is not a decimal number of seconds"
        ),
        (
            // A legal decimal so small that the measured bit rate is beyond Int: the report says so.
            "EXTINF of 1e-321 written out",
            "#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:0."
                + String(repeating: "0", count: 320) + "1,\nseg0.ts\n#EXT-X-ENDLIST",
            "BANDWIDTH is 1 but the segments measure 9223372036854775807 bit/s"
        ),
        (
            "implicit byte range offset past the limit",
            "#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\n"
                + "#EXT-X-BYTERANGE:536870000@0\nseg0.ts\n#EXTINF:6.0,\n#EXT-X-BYTERANGE:536870000\nseg0.ts\n"
                + "#EXT-X-ENDLIST",
            "byte range 536870000@536870000 ends past 536870912 bytes"
        ),
        (
            "one segment listed again and again",
            "#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n"
                + String(repeating: "#EXTINF:6.0,\nseg0.ts\n", count: 1_000) + "#EXT-X-ENDLIST",
            "segment seg0.ts is listed again"
        ),
        (
            "more entries than the verifier checks",
            "#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n"
                + String(repeating: "#EXTINF:1,\nseg0.ts\n", count: 200_001) + "#EXT-X-ENDLIST",
            "the media playlists list 200001 segments and ranges, more than the 200000 the verifier checks"
        ),
    ]

    @Test(arguments: hostilePlaylists.indices)
    func refusesHostilePlaylistsWithoutCrashing(_ index: Int) throws {
        let (_, body, says) = Self.hostilePlaylists[index]
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: false)
        try "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,AVERAGE-BANDWIDTH=1,CODECS=\"avc1.640028\"\nvideo.m3u8\n".write(
            toFile: output + "/master.m3u8", atomically: true, encoding: .utf8)
        try ("#EXTM3U\n" + body + "\n").write(toFile: output + "/video.m3u8", atomically: true, encoding: .utf8)
        try Data(Reference.noise(188 * 4)).write(to: URL(fileURLWithPath: output + "/seg0.ts"))
        let result = try guardPlay(["verify", output])
        #expect(result.status == 31, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains(says), "\(result.stdout)")
    }

    @Test func refusesAMasterNamingMorePlaylistsThanItReads() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: false)
        let variants = (0...1_000).map { "#EXT-X-STREAM-INF:BANDWIDTH=1\nv\($0).m3u8\n" }.joined()
        try ("#EXTM3U\n" + variants).write(toFile: output + "/master.m3u8", atomically: true, encoding: .utf8)
        let result = try guardPlay(["verify", output])
        #expect(result.status == 31, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("master.m3u8 names 1001 media playlists, more than the 1000 the verifier reads"))
    }

    @Test func saysWhatIsMissing() throws {
        let directory = try TemporaryDirectory()
        let missing = try guardPlay(["verify", directory.path("nothing")])
        #expect(missing.status == 10 && missing.stderr.contains("no output directory"))
        let output = try packaged(directory)
        let noKey = try verify(output, key: false)
        #expect(noKey.status == 2 && noKey.stderr.contains("give its key"))
        let badSource = try verify(output, source: directory.path("gone.mp4"))
        #expect(badSource.status == 10)
        let usage = try guardPlay(["verify"])
        #expect(usage.status == 2)
    }
}
