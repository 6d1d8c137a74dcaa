import Foundation
import Testing

/// `--container fmp4` checked with no GuardPlay code on the checking side: FFmpeg 5.1 decrypts the CMAF
/// tracks (`-decryption_key` over the init segment and the segments concatenated, or the HLS demuxer
/// through the master playlist) to frames equal to a plain decode of the source, a wrong key does not,
/// and FFmpeg's own slice-header trace (`trace_headers`) gives every slice's clear length.
///
/// FFmpeg's mov demuxer mis-maps `senc` entries on a seekable multi-fragment file ("Incorrect number of
/// samples in encryption info", with Bento4's output too; shared/reference/sample-aes.md §4.2), so the
/// concatenated file is read with `-seekable 0`. The source's AAC edit list drops the encoder's priming
/// frame, which the packaged track (no edit list) keeps, hence one more audio frame and an offset of one.
@Suite(.timeLimit(.minutes(30))) struct FragmentedMP4Tests {
    /// The init segment and every segment of `playlist` in `output`, concatenated into one file.
    func concatenated(_ output: String, _ name: String, into path: String) throws -> String {
        let text = try String(contentsOfFile: output + "/\(name).m3u8", encoding: .utf8)
        let lines = text.split(separator: "\n")
        let mapLine = try #require(lines.first { $0.hasPrefix("#EXT-X-MAP:URI=\"") })
        let initName = mapLine.dropFirst("#EXT-X-MAP:URI=\"".count).dropLast()
        var bytes = try Data(contentsOf: URL(fileURLWithPath: output + "/" + initName))
        for segment in lines where !segment.hasPrefix("#") {
            bytes += try Data(contentsOf: URL(fileURLWithPath: output + "/" + segment))
        }
        try bytes.write(to: URL(fileURLWithPath: path))
        return path
    }

    func decrypted(_ file: String, key: String, mayFail: Bool = false) throws -> [FrameHashes] {
        try frameHashes(file, options: ["-decryption_key", key, "-seekable", "0"], mayFail: mayFail)
    }

    @Test(arguments: ["sample-aes", "cenc"])
    func ffmpegDecryptsBothTracksToTheSourcesFrames(_ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(fixture("clip.mp4"), output, ["--container", "fmp4", "--encryption", encryption])
        #expect(result.status == 0, "\(result.stderr)")
        let reference = try frameHashes(fixture("clip.mp4"))
        let video = try decrypted(concatenated(output, "video", into: directory.path("video.mp4")), key: testKey)
        let audio = try decrypted(concatenated(output, "audio-1", into: directory.path("audio.mp4")), key: testKey)
        try #require(video.count == 1 && audio.count == 1 && reference.count == 2)
        let videoComparison = FrameComparison(video[0].hashes, reference[0].hashes, offset: 0)
        #expect(videoComparison.decoded == 300 && videoComparison.equal == 300, "\(videoComparison)")
        let audioComparison = FrameComparison(audio[0].hashes, reference[1].hashes, offset: -1)
        #expect(audioComparison.decoded == 470 && audioComparison.equal == 469, "\(audioComparison)")

        // The negative control: the same files under another key decode to no frame of the source (or
        // not at all: FFmpeg may give up on the garbage).
        let wrongKey = "ffeeddccbbaa99887766554433221100"
        let wrongVideo = try decrypted(directory.path("video.mp4"), key: wrongKey, mayFail: true)
        let wrongAudio = try decrypted(directory.path("audio.mp4"), key: wrongKey, mayFail: true)
        #expect(FrameComparison(wrongVideo.first?.hashes ?? [], reference[0].hashes, offset: 0).equal == 0)
        #expect(FrameComparison(wrongAudio.first?.hashes ?? [], reference[1].hashes, offset: -1).equal == 0)
    }

    /// The HLS demuxer passes the playlist's key to the mov demuxer for `METHOD=SAMPLE-AES` over fMP4
    /// (it does not know `SAMPLE-AES-CTR`, so `cenc` is checked above only).
    /// The summary names the scheme written: `sample-aes` in fMP4 is CENC cbcs, and HEVC input goes to
    /// fMP4 without `--container`.
    @Test func theSummaryNamesTheCENCSchemeWritten() throws {
        let directory = try TemporaryDirectory()
        for (input, extra, expected) in [
            ("clip.mp4", ["--container", "fmp4"], "(CENC cbcs, "), ("hevc.mp4", [], "(CENC cbcs, "),
            ("clip.mp4", ["--container", "fmp4", "--encryption", "cenc"], "(CENC cenc, "),
            ("clip.mp4", [], "(SAMPLE-AES, "),
        ] {
            let output = directory.path("out-\(UUID().uuidString)")
            let result = try guardPlay(["package", fixture(input), "--out", output, "--key", testKey] + extra)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains(expected), "\(input) \(extra): \(result.stdout)")
        }
    }

    @Test func ffmpegPlaysTheCBCSMasterPlaylist() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture("clip.mp4"), output, ["--container", "fmp4"]).status == 0)
        let decoded = try frameHashes(output + "/master.m3u8", options: ["-allowed_extensions", "ALL"])
        let reference = try frameHashes(fixture("clip.mp4"))
        let video = decoded.filter { $0.mediaType == "video" }
        let audio = decoded.filter { $0.mediaType == "audio" }
        try #require(video.count == 1 && audio.count == 1)
        #expect(FrameComparison(video[0].hashes, reference[0].hashes, offset: 0).equal == 300)
        #expect(FrameComparison(audio[0].hashes, reference[1].hashes, offset: -1).equal == 469)
    }

    /// The DASH manifest beside the master playlist names the same segments: FFmpeg's dash demuxer, with
    /// its `cenc_decryption_key`, decrypts them to the source's frames; under another key it does not.
    @Test(arguments: ["sample-aes", "cenc"])
    func ffmpegPlaysTheDASHManifest(_ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let license = "https://licenses.example.com/clearkey?asset=clip&v=1"
        let result = try package(
            fixture("clip.mp4"), output,
            ["--container", "fmp4", "--encryption", encryption, "--license-url", license, "--key-id", testIV])
        #expect(result.status == 0, "\(result.stderr)")
        let mpd = try String(contentsOfFile: output + "/manifest.mpd", encoding: .utf8)
        let scheme = encryption == "cenc" ? "cenc" : "cbcs"
        #expect(
            mpd.contains(
                "<ContentProtection schemeIdUri=\"urn:mpeg:dash:mp4protection:2011\" value=\"\(scheme)\" "
                    + "cenc:default_KID=\"0f0e0d0c-0b0a-0908-0706-050403020100\"/>"))
        #expect(mpd.contains("schemeIdUri=\"urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e\""))
        #expect(mpd.contains("<dashif:Laurl>https://licenses.example.com/clearkey?asset=clip&amp;v=1</dashif:Laurl>"))
        #expect(mpd.contains("type=\"static\"") && mpd.contains("<SegmentTimeline>"))
        // FFmpeg resolves the segment URLs against the manifest's own path only when it is absolute.
        let manifest = URL(fileURLWithPath: output + "/manifest.mpd").standardizedFileURL.path
        let decoded = try frameHashes(manifest, options: ["-cenc_decryption_key", testKey])
        let reference = try frameHashes(fixture("clip.mp4"))
        let video = decoded.filter { $0.mediaType == "video" }
        let audio = decoded.filter { $0.mediaType == "audio" }
        try #require(video.count == 1 && audio.count == 1 && reference.count == 2)
        let videoComparison = FrameComparison(video[0].hashes, reference[0].hashes, offset: 0)
        #expect(videoComparison.decoded == 300 && videoComparison.equal == 300, "\(videoComparison)")
        let audioComparison = FrameComparison(audio[0].hashes, reference[1].hashes, offset: -1)
        #expect(audioComparison.decoded == 470 && audioComparison.equal == 469, "\(audioComparison)")
        let wrongVideo = try hashesUnderWrongKey(manifest, mediaType: "video")
        #expect(FrameComparison(wrongVideo, reference[0].hashes, offset: 0).equal == 0)
    }

    @Test func aes128OutputHasNoDASHManifestAndLicenseURLsNeedFMP4() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(
            try package(fixture("clip.mp4"), output, ["--container", "fmp4", "--encryption", "aes-128"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: output + "/manifest.mpd"))
        let ts = try package(fixture("clip.mp4"), directory.path("ts"), ["--license-url", "https://x.example/"])
        #expect(ts.status == 3 && ts.stderr.contains("--container fmp4"), "\(ts.stderr)")
        let bad = try package(
            fixture("clip.mp4"), directory.path("bad"), ["--container", "fmp4", "--license-url", "ftp://x"])
        #expect(bad.status == 3, "\(bad.stderr)")
    }

    /// `verify` reads CMAF output: boxes, clear ranges, decryption and the source, bit for bit.
    @Test(arguments: ["sample-aes", "cenc", "aes-128", "none"])
    func verifyDecryptsEveryFragmentToTheSource(_ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(
            try package(fixture("dual-audio.mp4"), output, ["--container", "fmp4", "--encryption", encryption]).status
                == 0)
        var arguments = ["verify", output, "--source", fixture("dual-audio.mp4")]
        if encryption != "none" { arguments += ["--key-file", output + ".key"] }
        let verified = try guardPlay(arguments)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("video.m3u8  CMAF  video h264  frames 100"))
        #expect(verified.stdout.contains("equal 100/100 (source 100)"))
        #expect(verified.stdout.components(separatedBy: "equal 189/189 (source 189)").count == 3, "\(verified.stdout)")
        if encryption == "sample-aes" || encryption == "cenc" { #expect(verified.stdout.contains("decrypted 100")) }
    }

    /// A flipped byte in `senc`, a wrong `saio` offset and a changed sample each fail `verify` with a
    /// message that names the box (exit 31) or the sample (exit 30).
    @Test func verifyNamesWhatWasTamperedWith() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture("clip.mp4"), output, ["--container", "fmp4"]).status == 0)
        let segment = output + "/video_00000.m4s"
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment)))
        func offset(of type: String) throws -> Int {
            let code = Array(type.utf8)
            return try #require((0..<(original.count - 4)).first { Array(original[$0..<($0 + 4)]) == code })
        }
        func verify(_ change: (inout [UInt8]) throws -> Void) throws -> ProcessResult {
            var bytes = original
            try change(&bytes)
            try Data(bytes).write(to: URL(fileURLWithPath: segment))
            defer { try? Data(original).write(to: URL(fileURLWithPath: segment)) }
            return try guardPlay(["verify", output, "--source", fixture("clip.mp4"), "--key-file", output + ".key"])
        }
        #expect(try verify { _ in }.status == 0)
        // The first sample's first BytesOfClearData: senc type, version/flags, count, subsample count.
        let senc = try offset(of: "senc")
        let flippedSenc = try verify { $0[senc + 4 + 4 + 4 + 2 + 1] ^= 0x01 }
        #expect(flippedSenc.status == 31, "\(flippedSenc.stdout)")
        #expect(flippedSenc.stdout.contains("video_00000.m4s moof/traf senc"), "\(flippedSenc.stdout)")
        // Moving a clear byte into the protected count keeps the coverage but not the slice header.
        let movedSenc = try verify {
            $0[senc + 15] -= 1
            $0[senc + 19] += 1
        }
        #expect(movedSenc.status == 31, "\(movedSenc.stdout)")
        #expect(movedSenc.stdout.contains("senc maps subsamples") && movedSenc.stdout.contains("slice headers give"))
        let saio = try offset(of: "saio")
        let wrongSaio = try verify { $0[saio + 4 + 4 + 4 + 3] &+= 6 }
        #expect(wrongSaio.status == 31, "\(wrongSaio.stdout)")
        #expect(wrongSaio.stdout.contains("saio") && wrongSaio.stdout.contains("does not point at senc's first record"))
        let changedSample = try verify { $0[$0.count - 100] ^= 0x80 }
        #expect(changedSample.status == 30, "\(changedSample.stdout)")
        #expect(
            changedSample.stdout.contains("video_00000.m4s sample")
                && changedSample.stdout.contains("differs from the source"))
    }

    @Test func playlistsUseMapsVersionSixAndNoIVAndNameTheLanguages() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        #expect(try package(fixture("dual-audio.mp4"), output, ["--container", "fmp4"]).status == 0)
        let master = try String(contentsOfFile: output + "/master.m3u8", encoding: .utf8)
        #expect(master.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",LANGUAGE=\"en\""))
        #expect(master.contains("LANGUAGE=\"fr\""))
        #expect(master.contains("CODECS=\"avc1.") && master.contains(",mp4a.40.2\"") && !master.contains("encv"))
        #expect(master.contains("AUDIO=\"audio\"") && master.contains("BANDWIDTH="))
        for name in ["video", "audio-1", "audio-2"] {
            let text = try String(contentsOfFile: output + "/\(name).m3u8", encoding: .utf8)
            #expect(text.contains("#EXT-X-VERSION:6\n"), "\(name)")
            #expect(text.contains("#EXT-X-MAP:URI=\"\(name)_init.mp4\"\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI="), "\(name)")
            #expect(!text.contains("IV="), "\(name): cbcs carries its IV in tenc")
        }
        let cenc = directory.path("cenc")
        #expect(try package(fixture("clip.mp4"), cenc, ["--container", "fmp4", "--encryption", "cenc"]).status == 0)
        #expect(try String(contentsOfFile: cenc + "/video.m3u8", encoding: .utf8).contains("METHOD=SAMPLE-AES-CTR"))
    }

    @Test func aes128AndClearTracksDecodeToTheSourcesFrames() throws {
        let directory = try TemporaryDirectory()
        let reference = try frameHashes(fixture("clip.mp4"))
        for encryption in ["aes-128", "none"] {
            let output = directory.path(encryption)
            #expect(
                try package(fixture("clip.mp4"), output, ["--container", "fmp4", "--encryption", encryption]).status
                    == 0)
            let decoded = try frameHashes(output + "/master.m3u8", options: ["-allowed_extensions", "ALL"])
            let video = decoded.filter { $0.mediaType == "video" }
            try #require(video.count == 1, "\(encryption)")
            #expect(FrameComparison(video[0].hashes, reference[0].hashes, offset: 0).equal == 300, "\(encryption)")
        }
    }

    @Test func cencNeedsFMP4() throws {
        let directory = try TemporaryDirectory()
        let ts = try package(fixture("clip.mp4"), directory.path("a"), ["--encryption", "cenc"])
        #expect(ts.status == 3 && ts.stderr.contains("--container fmp4"), "\(ts.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("a")))
    }

    /// AC-3 and E-AC-3 in CMAF: an `ac-3` sample entry with `dac3`, or `ec-3` with `dec3` (behind `enca`
    /// and `frma` when encrypted), CODECS `ac-3`/`ec-3`; `verify --source` holds every sample to the
    /// source's, and FFmpeg's dash demuxer with the key decodes the audio to the source's frames under
    /// `cbcs` and `cenc`. Under another key it decodes none of them equal.
    @Test(arguments: [
        ("clip-ac3.mp4", "sample-aes"), ("clip-eac3.mp4", "sample-aes"), ("clip-ac3.mp4", "cenc"),
        ("clip-eac3.mp4", "cenc"),
    ])
    func dolbyAudioIsPackagedInFMP4(_ name: String, _ encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let result = try package(fixture(name), output, ["--container", "fmp4", "--encryption", encryption])
        try #require(result.status == 0, "\(result.stderr)")
        let (format, box) = name == "clip-ac3.mp4" ? ("ac-3", "dac3") : ("ec-3", "dec3")
        let master = try String(contentsOfFile: output + "/master.m3u8", encoding: .utf8)
        #expect(master.contains("CODECS=\"avc1.") && master.contains(",\(format)\""), "\(master)")
        let initSegment = try String(
            decoding: Data(contentsOf: URL(fileURLWithPath: output + "/audio-1_init.mp4")), as: UTF8.self)
        #expect(initSegment.contains("enca") && initSegment.contains("frma" + format) && initSegment.contains(box))
        let verified = try guardPlay(["verify", output, "--source", fixture(name), "--key", testKey])
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("equal 125/125"), "\(verified.stdout)")
        let manifest = URL(fileURLWithPath: output + "/manifest.mpd").standardizedFileURL.path
        let mpd = try String(contentsOfFile: manifest, encoding: .utf8)
        #expect(mpd.contains("codecs=\"\(format)\""), "\(mpd)")
        let reference = try frameHashes(fixture(name)).filter { $0.mediaType == "audio" }
        let decoded = try frameHashes(manifest, options: ["-cenc_decryption_key", testKey])
            .filter { $0.mediaType == "audio" }
        try #require(decoded.count == 1 && reference.count == 1 && reference[0].hashes.count == 125)
        // All but the first: the source's edit list trims that frame's 256 priming samples, and a CMAF track
        // carries no edit list (as with AAC, whose comparisons above leave one frame out too).
        let comparison = FrameComparison(decoded[0].hashes, reference[0].hashes, offset: 0)
        #expect(comparison.decoded == 125 && comparison.equal == 124, "\(comparison)")
        let wrongAudio = try hashesUnderWrongKey(manifest, mediaType: "audio")
        #expect(FrameComparison(wrongAudio, reference[0].hashes, offset: 0).equal == 0)
    }

    /// The `dac3`/`dec3` payload GuardPlay writes equals the one FFmpeg's mov muxer wrote into the
    /// fixture (`media/make-fixtures.sh`), an independent reading of the same syncframes.
    @Test(arguments: [("clip-ac3.mp4", "dac3"), ("clip-eac3.mp4", "dec3")])
    func theDolbySpecificBoxEqualsFFmpegs(_ name: String, _ box: String) throws {
        /// The payload of the first box of type `type` in `bytes`, found by its type and size.
        func payload(_ type: String, in bytes: [UInt8]) -> [UInt8]? {
            let tag = Array(type.utf8)
            guard let at = (4..<(bytes.count - 4)).first(where: { Array(bytes[$0..<($0 + 4)]) == tag }) else {
                return nil
            }
            let size = bytes[(at - 4)..<at].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8, at - 4 + size <= bytes.count else { return nil }
            return Array(bytes[(at + 4)..<(at - 4 + size)])
        }
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        try #require(try package(fixture(name), output, ["--container", "fmp4"]).status == 0)
        let ours = try [UInt8](Data(contentsOf: URL(fileURLWithPath: output + "/audio-1_init.mp4")))
        let ffmpegs = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture(name))))
        let written = try #require(payload(box, in: ours))
        #expect(written.count >= 3)
        #expect(written == payload(box, in: ffmpegs), "\(written) against FFmpeg's")
    }

    /// Every slice's clear part, as `senc` maps it, is its length prefix, NAL header and slice header:
    /// FFmpeg's `trace_headers` over the source gives where each slice header ends (in bits of the
    /// unescaped NAL unit), and the bytes before each protected range, unescaped, must be exactly that
    /// rounded up to a byte. cbcs and cenc (whose ranges are cut to whole blocks) both.
    @Test func clearRangesEndWhereFFmpegsSliceHeaderTraceEnds() throws {
        let trace = try run(
            "/usr/bin/ffmpeg",
            [
                "-hide_banner", "-nostdin", "-v", "verbose", "-i", fixture("clip.mp4"), "-map", "0:v", "-c", "copy",
                "-bsf:v", "trace_headers", "-f", "null", "-",
            ])
        var headerBytes: [Int] = []
        var lastEnd = 0
        var inSlice = false
        for line in trace.stderr.split(separator: "\n") where line.hasPrefix("[trace_headers") {
            guard let close = line.firstIndex(of: "]") else { continue }
            let text = line[line.index(after: close)...].drop { $0 == " " }
            let fields = text.split(separator: " ")
            if let first = fields.first, let position = Int(first), fields.count >= 3 {
                if inSlice && fields[1] != "cabac_alignment_one_bit" { lastEnd = position + fields[2].count }
                continue
            }
            if inSlice { headerBytes.append((lastEnd + 7) / 8) }
            inSlice = text.hasPrefix("Slice Header")
        }
        if inSlice { headerBytes.append((lastEnd + 7) / 8) }
        try #require(headerBytes.count == 300, "FFmpeg traced \(headerBytes.count) slice headers")

        let directory = try TemporaryDirectory()
        for (encryption, alignment) in [("sample-aes", 1), ("cenc", 16)] {
            let output = directory.path(encryption)
            #expect(
                try package(fixture("clip.mp4"), output, ["--container", "fmp4", "--encryption", encryption]).status
                    == 0)
            let playlist = try String(contentsOfFile: output + "/video.m3u8", encoding: .utf8)
            var ours: [Int] = []
            var protectedLengths: [Int] = []
            for segment in playlist.split(separator: "\n") where !segment.hasPrefix("#") {
                let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output + "/" + segment)))
                let top = try MP4Boxes.boxes(file[...])
                let moof = try #require(top.first { $0.type == "moof" }?.body)
                let mdat = try #require(top.first { $0.type == "mdat" }?.body)
                let traf = try #require(try MP4Boxes.boxes(moof).first { $0.type == "traf" }?.body)
                let senc = try #require(try MP4Boxes.boxes(traf).first { $0.type == "senc" }?.body)
                var cursor = senc.startIndex + 4
                func read(_ count: Int) -> Int {
                    defer { cursor += count }
                    return senc[cursor..<(cursor + count)].reduce(0) { $0 << 8 | Int($1) }
                }
                var sampleStart = mdat.startIndex
                for _ in 0..<read(4) {
                    cursor += alignment == 16 ? 8 : 0  // cenc's per-sample IV
                    var offset = sampleStart
                    var nalStarts: [Int] = []
                    var position = sampleStart
                    var protectedStarts: [Int] = []
                    for _ in 0..<read(2) {
                        position += read(2)
                        let length = read(4)
                        if length > 0 { protectedStarts.append(position) }
                        protectedLengths.append(length)
                        position += length
                    }
                    while offset < position {
                        nalStarts.append(offset)
                        offset += 4 + file[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
                    }
                    #expect(offset == position, "the subsamples cover the sample's NAL units exactly")
                    for start in protectedStarts {
                        let nal = try #require(nalStarts.last { $0 < start })
                        ours.append(unescapedCount(file[(nal + 4)..<start]))
                    }
                    sampleStart = position
                }
            }
            if alignment == 1 {
                #expect(ours == headerBytes, "\(encryption): clear lengths against FFmpeg's trace")
            } else {
                // Under cenc the clear part grows by what makes the protected range whole blocks.
                #expect(
                    ours.count == headerBytes.count && zip(ours, headerBytes).allSatisfy { $0 >= $1 && $0 - $1 < 16 })
                #expect(protectedLengths.allSatisfy { $0 % 16 == 0 })
            }
        }
    }

    /// Bytes of `escaped` once its emulation prevention bytes (the 03 of 00 00 03) are dropped.
    func unescapedCount(_ escaped: ArraySlice<UInt8>) -> Int {
        var zeros = 0
        var count = 0
        for byte in escaped {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            count += 1
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return count
    }
}
