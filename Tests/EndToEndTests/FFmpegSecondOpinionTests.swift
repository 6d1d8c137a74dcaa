import Foundation
import Testing

/// FFmpeg 5.1's own SAMPLE-AES decryption as a second opinion: `ffmpeg -allowed_extensions ALL -i
/// master.m3u8 -f framemd5` over outputs packaged with a constant explicit IV, against a plain decode.
///
/// The counts are exact. FFmpeg's known gaps (see shared/reference/sample-aes.md §4.3) show in them:
/// the access unit still buffered when the last segment ends is passed through undecrypted, so the
/// last video frame in decoding order (and the last AC-3/E-AC-3 frame) differs; AAC from TS decodes
/// the encoder's priming frame that the MP4 edit list drops, hence one more frame and an offset of
/// one; the first AC-3/E-AC-3 frame from TS differs even in a clear package. FFmpeg exits 0 even when
/// it cannot decrypt (without `-allowed_extensions ALL` it passes the video through encrypted), so
/// only frame counts and hashes are compared, never exit codes.
@Suite(.timeLimit(.minutes(30))) struct FFmpegSecondOpinionTests {
    /// One expectation: the stream's media type, the offset into the reference, and the counts.
    struct Expected: Sendable, CustomStringConvertible {
        var mediaType: String
        var offset: Int
        var decoded: Int
        var reference: Int
        var equal: Int
        var differing: [Int]
        var description: String { "\(mediaType) \(decoded)/\(reference) equal \(equal)" }
    }

    static func video(_ count: Int, lastDiffering index: Int) -> Expected {
        Expected(mediaType: "video", offset: 0, decoded: count, reference: count, equal: count - 1, differing: [index])
    }

    static func primedAAC(_ count: Int) -> Expected {
        Expected(mediaType: "audio", offset: -1, decoded: count + 1, reference: count, equal: count, differing: [0])
    }

    static func dolby(_ count: Int) -> Expected {
        Expected(
            mediaType: "audio", offset: 0, decoded: count, reference: count, equal: count - 2,
            differing: [0, count - 1])
    }

    /// Copied streams, against a plain decode of the source.
    static let copied: [(fixture: String, options: [String], streams: [Expected])] = [
        ("clip.mp4", [], [video(300, lastDiffering: 298), primedAAC(469)]),
        // Five segments instead of two: the cuts lose nothing, and the read-ahead gap stays at the end.
        ("clip.mp4", ["--segment-duration", "2"], [video(300, lastDiffering: 298), primedAAC(469)]),
        // Whole-segment AES-128, which FFmpeg decrypts completely: every video frame equal.
        (
            "clip.mp4", ["--encryption", "aes-128"],
            [
                Expected(mediaType: "video", offset: 0, decoded: 300, reference: 300, equal: 300, differing: []),
                primedAAC(469),
            ]
        ),
        ("clip-ac3.mp4", [], [video(100, lastDiffering: 99), dolby(125)]),
        ("clip-eac3.mp4", [], [video(100, lastDiffering: 99), dolby(125)]),
        ("video-only.mp4", [], [video(100, lastDiffering: 99)]),
        ("song.m4a", [], [primedAAC(431)]),
        ("song.m4a", ["--audio-format", "packed"], [primedAAC(431)]),
        ("mono-48k.m4a", [], [primedAAC(188)]),
        // FFmpeg 5.1 probes SAMPLE-AES TS audio renditions before decrypting them and fails, so several
        // audio tracks are checked as packed-audio renditions, which it reads through their ID3 tags.
        (
            "dual-audio.mp4", ["--audio-format", "packed"],
            [video(100, lastDiffering: 99), primedAAC(188), primedAAC(188)]
        ),
    ]

    @Test(arguments: copied.indices)
    func decryptsCopiedStreamsLikeAPlainDecodeOfTheSource(_ index: Int) throws {
        let (name, options, expected) = Self.copied[index]
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture(name), output, options).status == 0)
        let decoded = try frameHashes(output + "/master.m3u8", options: ["-allowed_extensions", "ALL"])
        let reference = try frameHashes(fixture(name))
        try compare(decoded, reference, expected)
    }

    /// Transcoded audio and a video made from a still have no source frames to match, so the reference
    /// is FFmpeg's decode of the same content packaged in the clear.
    @Test(arguments: [
        (
            "voice-22k-mono.mp3",
            [Expected(mediaType: "audio", offset: 0, decoded: 88, reference: 88, equal: 88, differing: [])]
        ),
        (
            "chime.opus",
            [Expected(mediaType: "audio", offset: 0, decoded: 189, reference: 189, equal: 189, differing: [])]
        ),
        (
            "chime-48k.flac",
            [Expected(mediaType: "audio", offset: 0, decoded: 189, reference: 189, equal: 189, differing: [])]
        ),
        // The still's last frames are skip frames of 48 bytes or less: nothing encrypted, nothing lost.
        (
            "qr-still.png",
            [Expected(mediaType: "video", offset: 0, decoded: 250, reference: 250, equal: 250, differing: [])]
        ),
    ])
    func decryptsEncodedStreamsLikeAClearPackage(_ name: String, _ expected: [Expected]) throws {
        let directory = try TemporaryDirectory()
        #expect(try package(fixture(name), directory.path("protected")).status == 0)
        #expect(try package(fixture(name), directory.path("clear"), ["--encryption", "none"]).status == 0)
        let decoded = try frameHashes(
            directory.path("protected") + "/master.m3u8", options: ["-allowed_extensions", "ALL"])
        let reference = try frameHashes(directory.path("clear") + "/master.m3u8")
        try compare(decoded, reference, expected)
    }

    /// FFmpeg's own SAMPLE-AES decryption, at the demuxer (`-c copy`), gives back the source's H.264 access
    /// units byte for byte: the source through FFmpeg's `h264_mp4toannexb` against the packaged HLS,
    /// both without SPS, PPS and AUD NAL units (the packager adds those, and `filter_units` re-assembles
    /// both sides with FFmpeg's own start codes). This proves, with no GuardPlay code on the checking side,
    /// that every slice and SEI reaches the output in order and that SAMPLE-AES encryption, the second
    /// escaping and the TS framing are undone exactly; it does not check the parameter sets, which the
    /// decoded-frame comparisons above cover. FFmpeg leaves the last access unit in decoding order
    /// encrypted (its read-ahead bug), so exactly that one differs.
    @Test func decryptsToTheSourcesAccessUnits() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture("clip.mp4"), output).status == 0)
        let withoutParameterSets = "filter_units=remove_types=7|8|9"
        let source = try packetHashes(
            fixture("clip.mp4"), bitstreamFilters: "h264_mp4toannexb," + withoutParameterSets)
        let decrypted = try packetHashes(
            output + "/master.m3u8", options: ["-allowed_extensions", "ALL"], bitstreamFilters: withoutParameterSets)
        #expect(source.count == 300 && decrypted.count == 300)
        let differing = (0..<min(source.count, decrypted.count)).filter { source[$0] != decrypted[$0] }
        #expect(differing == [299], "access units that differ: \(differing)")
    }

    /// The size and MD5 of every video packet, in file order, as `ffmpeg -c copy -f framemd5` lists them.
    private func packetHashes(_ input: String, options: [String] = [], bitstreamFilters: String) throws -> [String] {
        let directory = try TemporaryDirectory()
        let listing = directory.path("packets.md5")
        let result = try ffmpeg(
            options + ["-i", input, "-map", "0:v", "-c", "copy", "-bsf:v", bitstreamFilters, "-f", "framemd5", listing])
        try #require(result.status == 0, "ffmpeg could not read \(input): \(result.stderr.prefix(500))")
        return try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }
            .map { line in
                let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                return fields[4] + " " + fields[5]
            }
    }

    /// Streams are matched by media type in order, since FFmpeg lists renditions before the video.
    private func compare(_ decoded: [FrameHashes], _ reference: [FrameHashes], _ expected: [Expected]) throws {
        for type in ["video", "audio"] {
            let ours = decoded.filter { $0.mediaType == type }
            let theirs = reference.filter { $0.mediaType == type }
            let wanted = expected.filter { $0.mediaType == type }
            #expect(ours.count == wanted.count && theirs.count == wanted.count, "\(type) streams")
            for (index, expectation) in wanted.enumerated() where index < ours.count && index < theirs.count {
                let comparison = FrameComparison(ours[index].hashes, theirs[index].hashes, offset: expectation.offset)
                #expect(
                    comparison.decoded == expectation.decoded && comparison.reference == expectation.reference
                        && comparison.equal == expectation.equal && comparison.differing == expectation.differing,
                    "\(type) stream \(index): \(comparison), expected \(expectation)")
            }
        }
    }
}
