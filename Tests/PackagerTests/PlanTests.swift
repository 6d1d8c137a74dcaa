import MediaFormats
import Testing

@testable import Packager

private func stream(
    _ index: Int, _ media: InputStreamDescription.Media, _ codec: String, extradata: [UInt8] = [], tag: String = "",
    encrypted: Bool = false, attached: Bool = false
) -> InputStreamDescription {
    InputStreamDescription(
        index: index, media: media, codecName: codec, codecTag: tag, isEncrypted: encrypted,
        isAttachedPicture: attached, extradata: extradata, language: nil, title: nil)
}

@Suite struct StreamPlanTests {
    @Test func copiesH264AndAACAndTranscodesOtherAudio() throws {
        let plan = try StreamPlan.make(
            streams: [
                stream(0, .video, "h264"), stream(1, .audio, "aac", extradata: [0x12, 0x10]), stream(2, .audio, "mp3"),
                stream(3, .other("subtitle"), "mov_text"), stream(4, .audio, "eac3"),
            ], formatName: "mov,mp4,m4a,3gp,3g2,mj2")
        #expect(plan.video?.handling == .copyH264)
        #expect(
            plan.audio.map(\.handling) == [
                .copyAAC(try AudioSpecificConfig([0x12, 0x10])), .transcodeToAAC, .copyDolby,
            ])
        #expect(plan.audio.map(\.codec) == [.aac, .aac, .eac3])
        #expect(plan.notices.count == 2)
        #expect(plan.notices.contains { $0.contains("transcoding mp3") && $0.contains("AAC-LC") })
        #expect(plan.notices.contains { $0.contains("ignoring subtitle stream 3") })
    }

    @Test(arguments: [("vp9", "HEVC (fMP4) video only"), ("mpeg4", "HEVC (fMP4) video only")])
    func refusesVideoOtherThanH264AndHEVC(_ codec: String, _ says: String) {
        #expect {
            try StreamPlan.make(streams: [stream(0, .video, codec), stream(1, .audio, "aac")], formatName: "mov")
        } throws: { error in
            (error as? PackagingError)?.kind == .unsupportedCodec && "\(error)".contains(says)
        }
    }

    /// HEVC is planned, and goes to fMP4: with a notice when no container was asked for, refused with
    /// the hint under `--container ts`.
    @Test func plansHEVCForFMP4Only() throws {
        let plan = try StreamPlan.make(
            streams: [stream(0, .video, "hevc"), stream(1, .audio, "aac")], formatName: "mov")
        #expect(plan.video?.codec == .hevc && plan.video?.handling == .copyHEVC)
        let options = PackagingOptions(input: "in.mp4", output: "out")
        let (chosen, notices) = try PackagingJob.container(for: plan, options: options)
        #expect(chosen.container == .fragmentedMP4 && notices.count == 1 && notices[0].contains("HEVC"))
        var explicit = options
        explicit.containerIsDefault = false
        do {
            _ = try PackagingJob.container(for: plan, options: explicit)
            Issue.record("HEVC was packaged to TS")
        } catch {
            #expect(error.kind == .containerUnsupported && error.message.contains("--container fmp4"))
        }
        explicit.container = .fragmentedMP4
        #expect(try PackagingJob.container(for: plan, options: explicit).0.container == .fragmentedMP4)
        var packed = options
        packed.audioFormat = .packed
        #expect(throws: PackagingError.self) { _ = try PackagingJob.container(for: plan, options: packed) }
        let h264 = try StreamPlan.make(streams: [stream(0, .video, "h264")], formatName: "mov")
        #expect(try PackagingJob.container(for: h264, options: options).0.container == .transportStream)
    }

    @Test func refusesEncryptedInput() {
        #expect {
            try StreamPlan.make(streams: [stream(0, .video, "h264", tag: "encv", encrypted: true)], formatName: "mov")
        } throws: { error in
            (error as? PackagingError)?.kind == .encryptedInput && "\(error)".contains("encv")
        }
    }

    @Test func ignoresCoverArtAndMakesAStillIntoVideo() throws {
        let song = try StreamPlan.make(
            streams: [stream(0, .audio, "mp3"), stream(1, .video, "mjpeg", attached: true)], formatName: "mp3")
        #expect(song.video == nil && song.audio.count == 1)
        let still = try StreamPlan.make(streams: [stream(0, .video, "png")], formatName: "png_pipe")
        #expect(still.video?.handling == .encodeStill)
        #expect {
            try StreamPlan.make(streams: [stream(0, .video, "png")], formatName: "mov")
        } throws: { error in (error as? PackagingError)?.kind == .unsupportedCodec }
    }

    @Test(arguments: [(4_096, 4_096, true), (4_097, 16, false), (16, 4_097, false), (20_000, 20_000, false)])
    func encodesStillsUpTo4096PixelsASide(_ width: Int, _ height: Int, _ accepted: Bool) throws {
        var picture = stream(0, .video, "png")
        picture.width = width
        picture.height = height
        if accepted {
            #expect(try StreamPlan.make(streams: [picture], formatName: "png_pipe").video?.handling == .encodeStill)
        } else {
            #expect {
                try StreamPlan.make(streams: [picture], formatName: "png_pipe")
            } throws: { error in
                (error as? PackagingError)?.kind == .unsupportedCodec && "\(error)".contains("\(width)×\(height)")
                    && "\(error)".contains("at most 4096×4096")
            }
        }
    }

    @Test func transcodesAACThatADTSCannotCarry() throws {
        let plan = try StreamPlan.make(streams: [stream(0, .audio, "aac", extradata: [0x11, 0x80])], formatName: "mov")
        #expect(plan.audio.first?.handling == .transcodeToAAC)
        let adts = try StreamPlan.make(streams: [stream(0, .audio, "aac")], formatName: "mpegts")
        #expect(adts.audio.first?.handling == .copyADTS)
    }

    @Test func refusesInputWithNothingToPackage() {
        #expect {
            try StreamPlan.make(streams: [stream(0, .other("data"), "bin_data")], formatName: "mpegts")
        } throws: { error in (error as? PackagingError)?.kind == .inputNoStreams }
    }
}

@Suite struct OutputLayoutTests {
    @Test func muxesOneAudioWithVideoAndMakesRenditionsOfSeveral() {
        #expect(
            OutputLayout(hasVideo: true, audioCount: 1).playlists == [
                .init(name: "video", slots: [0, 1], isRendition: false)
            ])
        #expect(
            OutputLayout(hasVideo: true, audioCount: 0).playlists == [
                .init(name: "video", slots: [0], isRendition: false)
            ])
        #expect(
            OutputLayout(hasVideo: true, audioCount: 2).playlists == [
                .init(name: "video", slots: [0], isRendition: false),
                .init(name: "audio-1", slots: [1], isRendition: true),
                .init(name: "audio-2", slots: [2], isRendition: true),
            ])
        #expect(
            OutputLayout(hasVideo: false, audioCount: 1).playlists == [
                .init(name: "audio", slots: [0], isRendition: false)
            ])
        #expect(OutputLayout(hasVideo: false, audioCount: 2).playlists.map(\.name) == ["audio-1", "audio-2"])
    }
}

@Suite struct KeyMaterialTests {
    private func options(_ configure: (inout PackagingOptions) -> Void) -> PackagingOptions {
        var options = PackagingOptions(input: "in.mp4", output: "/srv/out/clip")
        options.keyFile = "/srv/out/clip.key"
        configure(&options)
        return options
    }

    @Test func namesTheKeyFileRelativeToThePlaylistsByDefault() throws {
        let keys = try KeyMaterial(options: options { _ in }, output: "/srv/out/clip")
        #expect(keys.uri == "../clip.key")
        #expect(keys.key.count == 16 && keys.iv.count == 16 && keys.keyID.count == 16)
        #expect(KeyMaterial.relativePath(from: "/a/b/c", to: "/a/d/k.key") == "../../d/k.key")
    }

    @Test func substitutesTheKeyIDInTheTemplate() throws {
        let kid = Array(0..<16).map { UInt8($0) }
        let keys = try KeyMaterial(
            options: options {
                $0.keyID = kid
                $0.keyURITemplate = "https://gw.example.com/v1/keys/{kid}"
            }, output: "/srv/out/clip")
        #expect(keys.uri == "https://gw.example.com/v1/keys/000102030405060708090a0b0c0d0e0f")
    }

    @Test func usesSkdURIsAndTheAppleKeyFormatForFairPlay() throws {
        let keys = try KeyMaterial(options: options { $0.keyFormat = .fairplay }, output: "/srv/out/clip")
        #expect(keys.uri?.hasPrefix("skd://") == true && keys.keyFormat == "com.apple.streamingkeydelivery")
        #expect {
            try KeyMaterial(
                options: options {
                    $0.keyFormat = .fairplay
                    $0.keyURITemplate = "https://x/{kid}"
                }, output: "/srv/out/clip")
        } throws: { error in (error as? PackagingError)?.kind == .invalidOptions }
    }

    @Test(arguments: [
        "/srv/out/clip/clip.key", "/srv/out/clip", "/srv/out/./clip/", "/srv/out/clip/x/../k.key",
    ])
    func refusesAKeyFileInsideThePublishedDirectory(_ path: String) {
        #expect {
            try PackagingJob(options: options { $0.keyFile = path }).checkPathsApart()
        } throws: { error in (error as? PackagingError)?.kind == .pathConflict && "\(error)".contains("inside") }
    }

    @Test(arguments: ["/srv/in/clip.mp4", "/srv/in", "/srv", "/srv/in/../in/./"])
    func refusesAnOutputThatIsOrHoldsTheInput(_ output: String) {
        let input = "/srv/in/clip.mp4"
        #expect {
            try PackagingJob(
                options: options {
                    $0.input = input
                    $0.output = output
                }
            ).checkPathsApart()
        } throws: { error in (error as? PackagingError)?.kind == .pathConflict && "\(error)".contains("the input") }
        #expect(throws: Never.self) {
            try PackagingJob(
                options: options {
                    $0.input = input
                    $0.output = "/srv/in2"
                }
            ).checkPathsApart()
        }
    }

    @Test func refusesTemplatesAPlaylistCannotCarryAndKeysOfTheWrongSize() {
        #expect {
            try KeyMaterial(options: options { $0.keyURITemplate = "https://x/\"{kid}" }, output: "/srv/out/clip")
        } throws: { error in (error as? PackagingError)?.kind == .invalidOptions }
        #expect {
            try KeyMaterial(options: options { $0.key = [1, 2, 3] }, output: "/srv/out/clip")
        } throws: { error in (error as? PackagingError)?.kind == .invalidOptions }
    }

    @Test func readsKeyFilesRawOrHex() {
        let key = Array(0..<16).map { UInt8($0) }
        #expect(KeyFileFormat.parse(key) == key)
        #expect(KeyFileFormat.parse(Array("000102030405060708090a0b0c0d0e0f\n".utf8)) == key)
        #expect(KeyFileFormat.parse(Array("0001".utf8)) == nil)
    }

    @Test func stepsAES128IVsPerSegmentWithCarry() {
        let iv: [UInt8] = [UInt8](repeating: 0, count: 14) + [0x00, 0xFF]
        #expect(SegmentedOutput.add(iv, 1) == [UInt8](repeating: 0, count: 14) + [0x01, 0x00])
        #expect(SegmentedOutput.add([UInt8](repeating: 0xFF, count: 16), 1) == [UInt8](repeating: 0, count: 16))
    }
}

@Suite struct TimestampMapperTests {
    @Test func rescalesToNinetyKilohertzWithTheOffset() {
        var mapper = TimestampMapper(timeBase: (1, 15_360), offset: 126_000, defaultDuration: 3_000)
        let first = mapper.map(pts: 1_024, dts: 0, duration: 512)
        #expect(first.pts == 126_000 + 6_000 && first.dts == 126_000 && first.duration == 3_000)
        #expect(mapper.rescale(1) == 6)  // 5.859 rounds to nearest
        #expect(mapper.rescale(-1) == -6)
    }

    @Test func repairsMissingAndNonIncreasingTimestamps() {
        var mapper = TimestampMapper(timeBase: (1, 90_000), offset: 0, defaultDuration: 3_000)
        _ = mapper.map(pts: 9_000, dts: 9_000, duration: 3_000)
        let missing = mapper.map(pts: nil, dts: nil, duration: 0)
        #expect(missing.dts == 12_000 && missing.pts == 12_000 && missing.duration == 3_000)
        let backwards = mapper.map(pts: 5_000, dts: 5_000, duration: 3_000)
        #expect(backwards.dts == 12_001 && backwards.pts == 12_001)
        #expect(mapper.repairs == 3)
        #expect(abs(mapper.rescale(Int64.max)) == 1 << 50)
    }
}
