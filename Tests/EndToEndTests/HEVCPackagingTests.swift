import Foundation
import Testing

/// HEVC input packaged to CMAF (`hvc1` + `hvcC`, `cbcs` or `cenc`), checked by FFmpeg 5.1 with no
/// GuardPlay code on the checking side, by `verify` against the source, and refused where it must be.
/// The fixtures (`media/hevc.mp4`, `hevc-mkv.mkv`, `hevc-ts.ts`: one encode in three containers) hold 75 frames and 142 AAC frames.
@Suite(.timeLimit(.minutes(30))) struct HEVCPackagingTests {
    static let containers = ["hevc.mp4", "hevc-mkv.mkv", "hevc-ts.ts"]
    let helpers = FragmentedMP4Tests()

    @Test func hevcWithoutAContainerGetsFMP4AndWithTSIsRefused() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try guardPlay([
            "package", fixture("hevc.mp4"), "--out", output, "--key", testKey, "--iv", testIV,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.components(separatedBy: "\n").filter { $0.contains("the video is HEVC") }.count == 1,
            "\(result.stderr)")
        let master = try String(contentsOfFile: output + "/master.m3u8", encoding: .utf8)
        #expect(master.contains("CODECS=\"hvc1.1.6.L") && master.contains(",mp4a.40.2\""), "\(master)")
        let mpd = try String(contentsOfFile: output + "/manifest.mpd", encoding: .utf8)
        #expect(mpd.contains("codecs=\"hvc1.1.6.L") && mpd.contains("value=\"cbcs\""), "\(mpd)")
        let initSegment = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output + "/video_init.mp4")))
        func has(_ type: String) -> Bool {
            let code = Array(type.utf8)
            return (0..<(initSegment.count - 4)).contains { Array(initSegment[$0..<($0 + 4)]) == code }
        }
        #expect(has("encv") && has("hvcC") && has("hvc1") && !has("avcC"))

        let ts = try package(fixture("hevc.mp4"), directory.path("ts"), ["--container", "ts"])
        #expect(ts.status == 16, "\(ts.stderr)")
        #expect(ts.stderr.contains("HEVC") && ts.stderr.contains("--container fmp4"), "\(ts.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("ts")))
    }

    /// FFmpeg decrypts the video track of every container's output, `cbcs` and `cenc`, to frames equal
    /// to a plain decode of the source; under another key no frame matches.
    @Test(arguments: containers, ["sample-aes", "cenc"])
    func ffmpegDecryptsHEVCToTheSourcesFrames(_ name: String, _ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(fixture(name), output, ["--container", "fmp4", "--encryption", encryption])
        #expect(result.status == 0, "\(result.stderr)")
        let reference = try frameHashes(fixture(name)).filter { $0.mediaType == "video" }
        let video = try helpers.decrypted(
            helpers.concatenated(output, "video", into: directory.path("video.mp4")), key: testKey)
        try #require(video.count == 1 && reference.count == 1)
        let comparison = FrameComparison(video[0].hashes, reference[0].hashes, offset: 0)
        #expect(comparison.decoded == 75 && comparison.equal == 75, "\(comparison)")

        let wrong = try helpers.decrypted(
            directory.path("video.mp4"), key: "ffeeddccbbaa99887766554433221100", mayFail: true)
        #expect(FrameComparison(wrong.first?.hashes ?? [], reference[0].hashes, offset: 0).equal == 0)
    }

    /// The HLS demuxer, given the master playlist, decrypts `cbcs` HEVC and its audio.
    @Test func ffmpegPlaysTheHEVCMasterPlaylist() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture("hevc.mp4"), output, ["--container", "fmp4"]).status == 0)
        let decoded = try frameHashes(output + "/master.m3u8", options: ["-allowed_extensions", "ALL"])
        let reference = try frameHashes(fixture("hevc.mp4"))
        let video = decoded.filter { $0.mediaType == "video" }
        try #require(video.count == 1 && reference.count == 2)
        #expect(FrameComparison(video[0].hashes, reference[0].hashes, offset: 0).equal == 75)
    }

    /// The DASH manifest names the same HEVC segments: FFmpeg's dash demuxer decrypts `cenc` and `cbcs`
    /// with its `cenc_decryption_key` to the source's frames, and under another key to none of them.
    @Test(arguments: ["cenc", "sample-aes"])
    func ffmpegPlaysTheHEVCDASHManifest(_ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(fixture("hevc.mp4"), output, ["--container", "fmp4", "--encryption", encryption])
        #expect(result.status == 0, "\(result.stderr)")
        let manifest = URL(fileURLWithPath: output + "/manifest.mpd").standardizedFileURL.path
        let reference = try frameHashes(fixture("hevc.mp4")).filter { $0.mediaType == "video" }
        let decoded = try frameHashes(manifest, options: ["-cenc_decryption_key", testKey])
        let video = decoded.filter { $0.mediaType == "video" }
        try #require(video.count == 1 && reference.count == 1)
        let comparison = FrameComparison(video[0].hashes, reference[0].hashes, offset: 0)
        #expect(comparison.decoded == 75 && comparison.equal == 75, "\(comparison)")
        let wrongVideo = try hashesUnderWrongKey(manifest, mediaType: "video")
        #expect(FrameComparison(wrongVideo, reference[0].hashes, offset: 0).equal == 0)
    }

    /// `verify` recomputes each slice's clear bytes and decrypts every sample to the source, bit for bit,
    /// for every container and scheme.
    @Test(arguments: containers, ["sample-aes", "cenc", "none"])
    func verifyDecryptsEveryHEVCSampleToTheSource(_ name: String, _ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(
            fixture(name), output, ["--container", "fmp4", "--encryption", encryption, "--segment-duration", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        var arguments = ["verify", output, "--source", fixture(name)]
        if encryption != "none" { arguments += ["--key-file", output + ".key"] }
        let verified = try guardPlay(arguments)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("video.m3u8  CMAF  video hevc  frames 75"), "\(verified.stdout)")
        #expect(verified.stdout.contains("equal 75/75 (source 75)"), "\(verified.stdout)")
        if encryption != "none" { #expect(verified.stdout.contains("decrypted 75")) }
    }

    /// A senc map one byte off in one slice (coverage kept) is caught by the slice-header recount.
    @Test func verifyCatchesAShiftedHEVCClearRange() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture("hevc.mp4"), output, ["--container", "fmp4"]).status == 0)
        let segment = output + "/video_00000.m4s"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment)))
        let code = Array("senc".utf8)
        let senc = try #require((0..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == code })
        // type, version/flags, sample count, subsample count, then BytesOfClearData (2) and protected (4).
        bytes[senc + 15] -= 1
        bytes[senc + 19] += 1
        try Data(bytes).write(to: URL(fileURLWithPath: segment))
        let verified = try guardPlay(["verify", output, "--key-file", output + ".key"])
        #expect(verified.status == 31, "\(verified.stdout)")
        #expect(verified.stdout.contains("senc maps subsamples") && verified.stdout.contains("slice headers give"))
    }

    /// A fragmented MP4 source (`moof` fragments, no sample table) is read like any other.
    @Test func packagesFragmentedMP4Input() throws {
        let directory = try TemporaryDirectory()
        let source = directory.path("fragmented.mp4")
        let made = try ffmpeg([
            "-i", fixture("hevc.mp4"), "-c", "copy", "-movflags", "frag_keyframe+empty_moov+default_base_moof", source,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        let output = directory.path("out")
        let result = try package(source, output, ["--container", "fmp4"])
        #expect(result.status == 0, "\(result.stderr)")
        let verified = try guardPlay(["verify", output, "--source", source, "--key-file", output + ".key"])
        #expect(verified.status == 0 && verified.stdout.contains("equal 75/75 (source 75)"), "\(verified.stdout)")
    }

    /// Interlaced HEVC is refused with the reason (exit 16), never packaged wrongly.
    @Test func refusesInterlacedHEVC() throws {
        let directory = try TemporaryDirectory()
        let source = directory.path("interlaced.mkv")
        let made = try ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=1", "-c:v", "libx265", "-x265-params",
            "log-level=error:interlace=tff", source,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        let result = try package(source, directory.path("out"), ["--container", "fmp4"])
        #expect(result.status == 16, "\(result.stderr)")
        #expect(result.stderr.contains("interlaced"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("out")))
    }

    /// A malformed hvcC, and a slice header that does not parse, are exit 14 naming the NAL unit.
    @Test func malformedHvcCAndSliceHeadersAreCorruptInput() throws {
        let directory = try TemporaryDirectory()
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture("hevc.mp4"))))
        func offset(of type: String) throws -> Int {
            let code = Array(type.utf8)
            return try #require((0..<(original.count - 4)).first { Array(original[$0..<($0 + 4)]) == code })
        }
        // hvcC: size and type, 22 bytes of fields, the array count, then the first array's type, count
        // and the first NAL unit's 16-bit length, here made to overrun the record.
        var badConfig = original
        let hvcC = try offset(of: "hvcC")
        badConfig[hvcC + 4 + 23 + 3] = 0xFF
        let configPath = directory.path("bad-hvcc.mp4")
        try Data(badConfig).write(to: URL(fileURLWithPath: configPath))
        let config = try package(configPath, directory.path("out1"), ["--container", "fmp4"])
        #expect(config.status == 14, "\(config.stderr)")
        #expect(config.stderr.contains("hvcC: NAL unit 0 of array 0"), "\(config.stderr)")

        // The first IDR slice (type 20: header 28 01) gets a slice_pic_parameter_set_id of 2^16, past 63.
        var badSlice = original
        let mdat = try offset(of: "mdat")
        let idr = try #require(
            (mdat..<(original.count - 6)).first { original[$0] == 0x28 && original[$0 + 1] == 0x01 })
        badSlice[idr + 2] = 0x80
        badSlice[idr + 3] = 0x00
        badSlice[idr + 4] = 0x00
        let slicePath = directory.path("bad-slice.mp4")
        try Data(badSlice).write(to: URL(fileURLWithPath: slicePath))
        let slice = try package(slicePath, directory.path("out2"), ["--container", "fmp4"])
        #expect(slice.status == 14, "\(slice.stderr)")
        #expect(
            slice.stderr.contains("frame 0") && slice.stderr.contains("HEVC NAL unit")
                && slice.stderr.contains("slice_pic_parameter_set_id"), "\(slice.stderr)")
        #expect(partialSiblings(of: directory.path("out2")).isEmpty)
    }
}
