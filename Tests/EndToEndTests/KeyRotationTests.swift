import Foundation
import Testing

/// `--key-period N`: a new key every N segments, in TS (a new EXT-X-KEY with its own IV) and in fMP4 (a
/// new init segment whose `tenc` names the period's key ID, an EXT-X-MAP/EXT-X-KEY pair where each period
/// starts), the key file a key list. Checked by `verify` with the key list and by FFmpeg 5.1 with each
/// period's key, with a wrong key as the negative control.
@Suite(.timeLimit(.minutes(30))) struct KeyRotationTests {
    /// The clip in 2-second segments (five of video), a new key every two: three key periods.
    static let rotation = ["--segment-duration", "2", "--key-period", "2", "--key-uri", "../keys/{kid}"]

    /// The key list a rotated package wrote: (key ID, key) in hex, period 0 first.
    func keyList(_ path: String) throws -> [(kid: String, key: String)] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { line in
            let fields = line.split(separator: " ")
            try #require(fields.count == 2)
            return (String(fields[0]), String(fields[1]))
        }
    }

    /// Writes each key of the list as the 16-byte file `keys/KID` beside the output, where the playlists'
    /// `../keys/{kid}` URIs lead FFmpeg; `wrong` replaces one period's key.
    func writeKeyFiles(_ list: [(kid: String, key: String)], in directory: TemporaryDirectory, wrong: Int? = nil) throws
    {
        try FileManager.default.createDirectory(atPath: directory.path("keys"), withIntermediateDirectories: true)
        for (index, entry) in list.enumerated() {
            let hex = index == wrong ? "ffeeddccbbaa99887766554433221100" : entry.key
            let bytes = stride(from: 0, to: 32, by: 2).map { offset -> UInt8 in
                let start = hex.index(hex.startIndex, offsetBy: offset)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
            }
            try Data(bytes).write(to: URL(fileURLWithPath: directory.path("keys/\(entry.kid)")))
        }
    }

    /// The key lines and maps of a media playlist, with the index of the segment each comes before.
    func tags(_ playlist: String, _ prefix: String) throws -> [(segment: Int, line: String)] {
        var segment = 0
        var found: [(segment: Int, line: String)] = []
        for line in try String(contentsOfFile: playlist, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix(prefix) { found.append((segment, String(line))) }
            if !line.hasPrefix("#") { segment += 1 }
        }
        return found
    }

    @Test func tsNamesAKeyWithItsOwnIVAtEachPeriodAndWritesAKeyList() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(fixture("clip.mp4"), output, Self.rotation)
        try #require(result.status == 0, "\(result.stderr)")
        let list = try keyList(output + ".key")
        #expect(list.count == 3 && list[0].key == testKey, "\(list)")
        #expect(Set(list.map(\.kid)).count == 3 && Set(list.map(\.key)).count == 3)
        var status = stat()
        #expect(stat(output + ".key", &status) == 0 && status.st_mode & 0o777 == 0o600)
        let keys = try tags(output + "/video.m3u8", "#EXT-X-KEY:")
        #expect(keys.map(\.segment) == [0, 2, 4], "\(keys)")
        for (index, key) in keys.enumerated() {
            #expect(key.line.contains("METHOD=SAMPLE-AES,URI=\"../keys/\(list[index].kid)\",IV=0x"), "\(key.line)")
        }
        #expect(keys[0].line.contains("IV=0x\(testIV.uppercased())"))
        #expect(Set(keys.map { $0.line.components(separatedBy: "IV=")[1] }).count == 3, "each period has its own IV")
        // The I-frame playlist names the same key at each period's first I-frame.
        let iFrameKeys = try tags(output + "/iframes.m3u8", "#EXT-X-KEY:").map(\.line)
        #expect(iFrameKeys == keys.map(\.line))

        let verified = try guardPlay(["verify", output, "--source", fixture("clip.mp4"), "--key-file", output + ".key"])
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.stdout.contains("keys rotate every 2 segments"), "\(verified.stdout)")
        // One key is not enough: the later periods do not decrypt with the first period's key.
        let oneKey = try guardPlay(["verify", output, "--source", fixture("clip.mp4"), "--key", testKey])
        #expect(oneKey.status != 0, "\(oneKey.stdout)")
    }

    /// FFmpeg's HLS demuxer fetches each period's key from its URI and decrypts every period. Its
    /// read-ahead bug (the access unit still buffered when a segment ends is finished only once the next
    /// segment is read) shows at every key change: each period's last video frame in decoding order
    /// (frames 118 and 238 here, in presentation order) is decrypted with the next period's key, and the
    /// very last stays encrypted as in a one-key package. `verify`, our oracle, finds every frame equal.
    /// With one period's key file wrong, that period's frames no longer match.
    @Test func ffmpegDecryptsARotatedTSPackageWithEachPeriodsKey() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        try #require(try package(fixture("clip.mp4"), output, Self.rotation).status == 0)
        let list = try keyList(output + ".key")
        try #require(list.count == 3)
        let oracle = try guardPlay(["verify", output, "--source", fixture("clip.mp4"), "--key-file", output + ".key"])
        #expect(oracle.status == 0, "\(oracle.stdout)")
        let reference = try frameHashes(fixture("clip.mp4"))
        try writeKeyFiles(list, in: directory)
        let decoded = try frameHashes(output + "/master.m3u8", options: ["-allowed_extensions", "ALL"])
        try #require(decoded.count == 2 && reference.count == 2)
        let video = FrameComparison(decoded[0].hashes, reference[0].hashes, offset: 0)
        #expect(video.decoded == 300 && video.differing == [118, 238, 298], "\(video)")
        let audio = FrameComparison(decoded[1].hashes, reference[1].hashes, offset: -1)
        #expect(audio.decoded == 470 && audio.equal == 469, "\(audio)")

        try writeKeyFiles(list, in: directory, wrong: 1)
        let wrong = try frameHashes(output + "/master.m3u8", options: ["-allowed_extensions", "ALL"], mayFail: true)
        let wrongVideo = FrameComparison(wrong.first?.hashes ?? [], reference[0].hashes, offset: 0)
        // Period 1 is segments 2 and 3, frames 120 to 239: none of them matches; the others still do.
        #expect(Set(120..<240).isSubset(of: wrongVideo.differing), "\(wrongVideo)")
        #expect(wrongVideo.differing.allSatisfy { (118..<240).contains($0) || $0 == 298 }, "\(wrongVideo)")
    }

    @Test func fmp4WritesAnInitSegmentAndAMapKeyPairPerPeriod() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(fixture("clip.mp4"), output, ["--container", "fmp4"] + Self.rotation)
        try #require(result.status == 0, "\(result.stderr)")
        let list = try keyList(output + ".key")
        try #require(list.count == 3)
        let maps = try tags(output + "/video.m3u8", "#EXT-X-MAP:")
        let keys = try tags(output + "/video.m3u8", "#EXT-X-KEY:")
        #expect(maps.map(\.segment) == [0, 2, 4] && keys.map(\.segment) == [0, 2, 4], "\(maps) \(keys)")
        #expect(
            maps.map(\.line)
                == ["video_init.mp4", "video_init_p1.mp4", "video_init_p2.mp4"].map { "#EXT-X-MAP:URI=\"\($0)\"" })
        for (index, map) in maps.enumerated() {
            let name = map.line.components(separatedBy: "\"")[1]
            let initBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output + "/" + name)))
            // tenc: version 1, reserved, pattern, isProtected, IV size 0, then the 16-byte key ID.
            let tenc = try #require(
                (0..<(initBytes.count - 4)).first { Array(initBytes[$0..<($0 + 4)]) == Array("tenc".utf8) })
            let kid = initBytes[(tenc + 12)..<(tenc + 28)].map { String(format: "%02x", $0) }.joined()
            #expect(kid == list[index].kid, "\(name)")
            #expect(
                keys[index].line.contains("URI=\"../keys/\(list[index].kid)\"") && !keys[index].line.contains("IV="))
        }
        // The DASH manifest has a Period per key period (DASHRotationTests reads it).
        #expect(FileManager.default.fileExists(atPath: output + "/manifest.mpd"))
        let verified = try guardPlay(["verify", output, "--source", fixture("clip.mp4"), "--key-file", output + ".key"])
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.stdout.contains("keys rotate every 2 segments"), "\(verified.stdout)")
    }

    /// HEVC rotates too: each period's init segment carries the hvcC again under its own key ID, and
    /// `verify` recounts every slice's clear bytes against each period's parameter sets.
    @Test(arguments: ["sample-aes", "cenc"])
    func aRotatedHEVCPackageVerifiesPeriodByPeriod(_ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let options = [
            "--encryption", encryption, "--segment-duration", "1", "--key-period", "1", "--key-uri", "../keys/{kid}",
        ]
        let result = try package(fixture("hevc.mp4"), output, options)
        try #require(result.status == 0, "\(result.stderr)")
        let list = try keyList(output + ".key")
        // Three one-second video segments; audio, cut by its own duration, may have a fourth.
        #expect(list.count >= 3, "\(list)")
        let maps = try tags(output + "/video.m3u8", "#EXT-X-MAP:")
        #expect(maps.count == 3, "\(maps)")
        let verified = try guardPlay(["verify", output, "--source", fixture("hevc.mp4"), "--key-file", output + ".key"])
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.stdout.contains("keys rotate every 1 segment"), "\(verified.stdout)")
        // The negative control: one period's key wrong in the list, and that period no longer verifies.
        var lines = try String(contentsOfFile: output + ".key", encoding: .utf8).split(separator: "\n").map(String.init)
        lines[1] = list[1].kid + " ffeeddccbbaa99887766554433221100"
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: directory.path("wrong.key"), atomically: true, encoding: .utf8)
        let wrong = try guardPlay([
            "verify", output, "--source", fixture("hevc.mp4"), "--key-file", directory.path("wrong.key"),
        ])
        #expect(wrong.status != 0, "\(wrong.stdout)")
    }

    /// Each key period's init segment and segments, concatenated, decrypt in FFmpeg (`-decryption_key`)
    /// with that period's key to that stretch of the source's frames, and with another period's key to
    /// none of them.
    @Test(arguments: ["sample-aes", "cenc"])
    func ffmpegDecryptsEachFMP4PeriodWithItsKey(_ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let options = ["--container", "fmp4", "--encryption", encryption] + Self.rotation
        try #require(try package(fixture("clip.mp4"), output, options).status == 0)
        let list = try keyList(output + ".key")
        try #require(list.count == 3)
        let reference = try frameHashes(fixture("clip.mp4"))[0].hashes
        let lines = try String(contentsOfFile: output + "/video.m3u8", encoding: .utf8).split(separator: "\n")
        var periods: [Data] = []
        for line in lines {
            if line.hasPrefix("#EXT-X-MAP:URI=\"") {
                periods.append(try Data(contentsOf: URL(fileURLWithPath: output + "/" + line.dropFirst(16).dropLast())))
            } else if !line.hasPrefix("#") {
                periods[periods.count - 1] += try Data(contentsOf: URL(fileURLWithPath: output + "/" + line))
            }
        }
        try #require(periods.count == 3)
        var offset = 0
        for (index, bytes) in periods.enumerated() {
            let file = directory.path("period\(index).mp4")
            try bytes.write(to: URL(fileURLWithPath: file))
            let right = try frameHashes(file, options: ["-decryption_key", list[index].key, "-seekable", "0"])
            let frames = try #require(right.first?.hashes)
            let comparison = FrameComparison(frames, reference, offset: offset)
            #expect(!frames.isEmpty && comparison.equal == frames.count, "period \(index): \(comparison)")
            let other = list[(index + 1) % list.count].key
            let wrong = try frameHashes(file, options: ["-decryption_key", other, "-seekable", "0"], mayFail: true)
            #expect(FrameComparison(wrong.first?.hashes ?? [], reference, offset: offset).equal == 0, "period \(index)")
            offset += frames.count
        }
        #expect(offset == 300)
    }

    /// A segment encrypted under another period's key (the first period's, from a one-key package of the
    /// same key) in place of a period-1 segment: `verify` with the key list reports its samples.
    @Test(arguments: ["ts", "fmp4"])
    func verifyReportsASegmentUnderAnotherPeriodsKey(_ container: String) throws {
        let directory = try TemporaryDirectory()
        let rotated = directory.path("rotated")
        let single = directory.path("single")
        let common = ["--container", container, "--key-id", testIV]
        try #require(try package(fixture("clip.mp4"), rotated, common + Self.rotation).status == 0)
        let oneKey = ["--segment-duration", "2", "--key-uri", "../keys/{kid}"]
        try #require(try package(fixture("clip.mp4"), single, common + oneKey).status == 0)
        let name = container == "ts" ? "video_00002.ts" : "video_00002.m4s"
        let before = try guardPlay(
            ["verify", rotated, "--source", fixture("clip.mp4"), "--key-file", rotated + ".key"])
        #expect(before.status == 0, "\(before.stdout)")
        try FileManager.default.removeItem(atPath: rotated + "/" + name)
        try FileManager.default.copyItem(atPath: single + "/" + name, toPath: rotated + "/" + name)
        let after = try guardPlay(["verify", rotated, "--source", fixture("clip.mp4"), "--key-file", rotated + ".key"])
        #expect(after.status == 30 || after.status == 31, "\(after.stdout)")
        #expect(after.stdout.contains(name), "\(after.stdout)")
    }

    /// Playlists whose key periods do not match the key list: the key lines of periods 1 and 2 swapped
    /// (TS), or period 1's key line naming period 2's key while its init segment names period 1's (fMP4).
    @Test(arguments: ["ts", "fmp4"])
    func verifyReportsPeriodsThatDoNotMatchTheKeyList(_ container: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        try #require(try package(fixture("clip.mp4"), output, ["--container", container] + Self.rotation).status == 0)
        let list = try keyList(output + ".key")
        try #require(list.count == 3)
        let playlist = output + "/video.m3u8"
        var text = try String(contentsOfFile: playlist, encoding: .utf8)
        if container == "ts" {
            text = text.replacingOccurrences(of: list[1].kid, with: "PERIOD-ONE")
                .replacingOccurrences(of: list[2].kid, with: list[1].kid)
                .replacingOccurrences(of: "PERIOD-ONE", with: list[2].kid)
        } else {
            text = text.replacingOccurrences(
                of: "URI=\"../keys/\(list[1].kid)\"", with: "URI=\"../keys/\(list[2].kid)\"")
        }
        try text.write(toFile: playlist, atomically: false, encoding: .utf8)
        let result = try guardPlay(["verify", output, "--key-file", output + ".key"])
        // 31 for the rule broken; in TS also 30, since the swapped periods' slices decrypt to garbage.
        #expect(result.status == 31 || (container == "ts" && result.status == 30), "\(result.stdout)")
        let expected =
            container == "ts"
            ? "video.m3u8: its key periods use the key list's keys 0,2,1, not each in turn from the first"
            : "video_00002.m4s: its key line names another key than its init segment video_init_p1.mp4's tenc key ID"
        #expect(result.stdout.contains(expected), "\(result.stdout)")
    }

    /// AES-128 rotates too: each segment's key line names its period's key.
    @Test(arguments: ["ts", "fmp4"])
    func aes128RotatesAndVerifies(_ container: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let options = ["--container", container, "--encryption", "aes-128"] + Self.rotation
        try #require(try package(fixture("clip.mp4"), output, options).status == 0)
        let list = try keyList(output + ".key")
        let uris = try tags(output + "/video.m3u8", "#EXT-X-KEY:").map { $0.line.components(separatedBy: "\"")[1] }
        #expect(
            uris == [
                "../keys/\(list[0].kid)", "../keys/\(list[0].kid)", "../keys/\(list[1].kid)",
                "../keys/\(list[1].kid)", "../keys/\(list[2].kid)",
            ])
        let verified = try guardPlay(["verify", output, "--source", fixture("clip.mp4"), "--key-file", output + ".key"])
        #expect(verified.status == 0, "\(verified.stdout)")
    }

    @Test(arguments: [
        (
            ["--key-period", "0"],
            "invalid value '0' for --key-period: expected a whole number of segments from 1 to 100000"
        ),
        (["--key-period", "-2"], "invalid value '-2' for --key-period"),
        (["--key-period", "1.5"], "invalid value '1.5' for --key-period"),
        (["--key-period", "100001"], "invalid value '100001' for --key-period"),
        (["--key-period", "2"], "--key-period needs --key-uri with {kid} in it"),
        (["--key-period", "2", "--key-uri", "https://keys.example/one"], "must hold {kid}"),
        (["--key-period", "2", "--key-uri", "k/{kid}", "--encryption", "none"], "it needs encryption"),
    ])
    func refusesBadKeyPeriods(_ options: [String], _ message: String) throws {
        let directory = try TemporaryDirectory()
        let result = try package(fixture("clip.mp4"), directory.path("out"), options)
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("out")))
    }

    /// The key list is written aside and renamed like a key: never over the input, and `--force` replaces
    /// a key list it wrote.
    @Test func theKeyListNeverLandsOnTheInputAndForceReplacesOne() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("clip.mp4")
        try FileManager.default.copyItem(atPath: fixture("clip.mp4"), toPath: input)
        let before = try Data(contentsOf: URL(fileURLWithPath: input))
        let onInput = try package(input, directory.path("out"), Self.rotation + ["--key-file", input, "--force"])
        #expect(onInput.status == 2, "\(onInput.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == before)

        let output = directory.path("out")
        try #require(try package(input, output, Self.rotation).status == 0)
        let first = try keyList(output + ".key")
        let again = try package(input, output, Self.rotation + ["--force"])
        #expect(again.status == 0, "\(again.stderr)")
        let second = try keyList(output + ".key")
        #expect(second.count == 3 && second[1].kid != first[1].kid, "later periods draw new keys")
        #expect(partialSiblings(of: output).isEmpty && partialSiblings(of: output + ".key").isEmpty)
    }
}
