import Foundation
import Testing

/// Every refusal has its own exit code and a message that says why and what to do, and leaves nothing
/// behind: no output directory, no key file, no hidden build directory.
@Suite(.timeLimit(.minutes(30))) struct PackageRefusalTests {
    /// Packages `input` into a fresh directory and checks the exit code, the message, and that nothing
    /// was written.
    private func expectRefusal(
        _ input: String, _ extra: [String] = [], status: Int32, says fragments: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        // "OUT" in an option stands for the output directory's path.
        let options = extra.map { $0.replacingOccurrences(of: "OUT", with: output) }
        let result = try guardPlay(["package", input, "--out", output] + options)
        #expect(result.status == status, "\(result.stderr)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(result.stderr.contains(fragment), "\(result.stderr)", sourceLocation: sourceLocation)
        }
        #expect(
            result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)",
            sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: output), sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: output + ".key"), sourceLocation: sourceLocation)
        #expect(partialSiblings(of: output).isEmpty, sourceLocation: sourceLocation)
    }

    @Test func refusesMissingEmptyTextAndUnknownInput() throws {
        let directory = try TemporaryDirectory()
        try expectRefusal(directory.path("nope.mp4"), status: 10, says: ["No such file"])
        try expectRefusal(directory.url.path, status: 10, says: ["is a directory"])
        _ = FileManager.default.createFile(atPath: directory.path("empty.mp4"), contents: Data())
        try expectRefusal(directory.path("empty.mp4"), status: 11, says: ["empty"])
        _ = FileManager.default.createFile(
            atPath: directory.path("notes.mp4"), contents: Data("just some notes\n".utf8))
        try expectRefusal(directory.path("notes.mp4"), status: 12, says: ["text, not media"])
        _ = FileManager.default.createFile(
            atPath: directory.path("list.m3u8"), contents: Data("#EXTM3U\n#EXTINF:1,\na.ts\n".utf8))
        try expectRefusal(directory.path("list.m3u8"), status: 12, says: ["playlist", "original media"])
        _ = FileManager.default.createFile(
            atPath: directory.path("noise.bin"), contents: Data(Reference.noise(4_096)))
        try expectRefusal(directory.path("noise.bin"), status: 13, says: ["not in a media format"])
    }

    @Test func refusesATruncatedInput() throws {
        let directory = try TemporaryDirectory()
        let whole = try Data(contentsOf: URL(fileURLWithPath: fixture("clip.mp4")))
        _ = FileManager.default.createFile(
            atPath: directory.path("cut.mp4"), contents: whole.prefix(whole.count * 2 / 5))
        try expectRefusal(directory.path("cut.mp4"), status: 14, says: ["cut short"])
    }

    @Test func refusesHEVCInTSPointingToFMP4Cbcs() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("hevc.mp4")
        let made = try ffmpeg([
            "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=1", "-c:v", "libx265", "-x265-params",
            "log-level=none", input,
        ])
        #expect(made.status == 0, "libx265: \(made.stderr)")
        try expectRefusal(
            input, ["--container", "ts"], status: 16, says: ["HEVC", "fMP4", "cbcs", "--container fmp4"])
    }

    /// H.264 with a data-partitioning NAL unit (type 2) in a picture: CMAF's clear ranges are defined
    /// here for plain slices only, so it is refused as unsupported (16), not as broken input (14).
    @Test func refusesH264DataPartitioningInFMP4AsUnsupported() throws {
        let directory = try TemporaryDirectory()
        let plain = directory.path("plain.h264")
        let made = try ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "2", "-c:v", "libx264", "-f", "h264", plain,
        ])
        #expect(made.status == 0, "libx264: \(made.stderr)")
        // A partition A NAL unit (nal_ref_idc 3, type 2) put before the eleventh start code.
        let stream = [UInt8](try Data(contentsOf: URL(fileURLWithPath: plain)))
        var starts: [Int] = []
        for index in 0..<(stream.count - 3) where stream[index..<(index + 4)].elementsEqual([0, 0, 0, 1]) {
            starts.append(index)
        }
        try #require(starts.count > 10)
        let partitioned =
            Array(stream[..<starts[10]]) + [0, 0, 0, 1, 0x62, 0x88, 0x84, 0x21, 0xA0]
            + Array(stream[starts[10]...])
        let input = directory.path("partitioned.h264")
        try Data(partitioned).write(to: URL(fileURLWithPath: input))
        try expectRefusal(
            input, ["--container", "fmp4"], status: 16, says: ["type 2", "data partitioning", "plain slices"])
    }

    @Test func refusesOtherVideoCodecs() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("mpeg4.mp4")
        #expect(
            try ffmpeg(["-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=1", "-c:v", "mpeg4", input]).status
                == 0)
        try expectRefusal(input, status: 16, says: ["mpeg4", "HEVC (fMP4) video only", "re-encode"])
    }

    @Test func refusesAStillImageLargerThan4096PixelsASide() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("wide.png")
        #expect(try ffmpeg(["-f", "lavfi", "-i", "color=size=4104x16", "-frames:v", "1", input]).status == 0)
        try expectRefusal(input, status: 16, says: ["4104×16", "at most 4096×4096", "scale"])
    }

    @Test func refusesInputWithNoAudioOrVideo() throws {
        let directory = try TemporaryDirectory()
        _ = FileManager.default.createFile(
            atPath: directory.path("s.srt"), contents: Data("1\n00:00:00,000 --> 00:00:01,000\nhello\n".utf8))
        #expect(try ffmpeg(["-i", directory.path("s.srt"), directory.path("subtitles.mkv")]).status == 0)
        try expectRefusal(directory.path("subtitles.mkv"), status: 15, says: ["no audio or video"])
    }

    @Test func refusesCENCEncryptedInput() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("cenc.mp4")
        let made = try ffmpeg([
            "-i", fixture("clip.mp4"), "-t", "1", "-c", "copy", "-encryption_scheme", "cenc-aes-ctr",
            "-encryption_key", testKey, "-encryption_kid", testKey, input,
        ])
        #expect(made.status == 0)
        try expectRefusal(input, status: 17, says: ["already CENC encrypted", "clear"])
    }

    @Test func refusesSampleAESTransportStreams() throws {
        let directory = try TemporaryDirectory()
        #expect(try package(fixture("video-only.mp4"), directory.path("hls")).status == 0)
        try expectRefusal(directory.path("hls/video_00000.ts"), status: 17, says: ["already SAMPLE-AES", "0xDB"])
    }

    @Test func refusesAnExistingOutputOrKeyFileWithoutForce() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture("song.m4a"), output).status == 0)
        let before = try snapshot(output)
        let again = try package(fixture("song.m4a"), output)
        #expect(again.status == 21 && again.stderr.contains("already exists") && again.stderr.contains("--force"))
        #expect(try snapshot(output) == before)

        let other = directory.path("other")
        let keyClash = try package(fixture("song.m4a"), other, ["--key-file", output + ".key"])
        #expect(keyClash.status == 21 && keyClash.stderr.contains("key file"))
        #expect(!FileManager.default.fileExists(atPath: other))
    }

    @Test func refusesBadOptions() throws {
        let song = fixture("song.m4a")
        try expectRefusal(song, ["--key-file", "OUT/k.key"], status: 2, says: ["inside the output"])
        try expectRefusal(song, ["--key", "abcd"], status: 3, says: ["--key"])
        try expectRefusal(song, ["--encryption", "cbcs"], status: 3, says: ["sample-aes, cenc, aes-128 or none"])
        try expectRefusal(song, ["--segment-duration", "0.5"], status: 3, says: ["between 1 and 60"])
        try expectRefusal(song, ["--key-format", "fairplay", "--encryption", "aes-128"], status: 3, says: ["FairPlay"])
        try expectRefusal(song, ["--key-uri", "https://k/\"{kid}"], status: 3, says: ["quote"])
        let usage = try guardPlay(["package", song])
        #expect(usage.status == 2 && usage.stderr.contains("--out"))
    }
}

extension Reference {
    /// Deterministic bytes that no demuxer recognises.
    static func noise(_ count: Int) -> [UInt8] {
        var state: UInt32 = 0x1234_5678
        return (0..<count).map { _ in
            state = state &* 1_103_515_245 &+ 12_345
            return UInt8(truncatingIfNeeded: state >> 16) | 0x80
        }
    }
}

/// A namespace for the end-to-end tests' generated data.
enum Reference {}
