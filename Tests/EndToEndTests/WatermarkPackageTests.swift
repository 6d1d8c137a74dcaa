import Crypto
import Foundation
import MediaFormats
import Testing

@testable import Packager

/// `package --watermark ab`: two variants of every video segment, A and B, invisible beside a plain
/// encode, carrying the keyed pattern of their own segment, readable by `WatermarkReader` after a
/// re-encode and a scale, with identical timestamps; and the refusals.
@Suite(.timeLimit(.minutes(30))) struct WatermarkPackageTests {
    static let key = "8899aabbccddeeff0011223344556677"

    /// Packages `input` unencrypted with the watermark and 2-second segments into `directory/out`.
    private func packageMarked(_ input: String, in directory: TemporaryDirectory, _ extra: [String] = [])
        throws -> String
    {
        let output = directory.path("out")
        let result = try guardPlay(
            [
                "package", input, "--out", output, "--encryption", "none", "--watermark", "ab", "--watermark-key",
                Self.key, "--segment-duration", "2", "--quiet",
            ] + extra, timeout: 600)
        try #require(result.status == 0, "\(result.stderr)")
        return output
    }

    /// The segment URIs of a media playlist, in order.
    private func segments(_ playlist: String) throws -> [String] {
        try String(contentsOfFile: playlist, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("#") && !$0.isEmpty }
    }

    /// The `.b` name beside an `.a` one.
    private func bName(_ uri: String) throws -> String {
        try #require(WatermarkManifest.variantURI(uri, .b))
    }

    /// Concatenates the files `names` of `directory` (TS segments) into `target`.
    private func concatenate(_ names: [String], in directory: String, to target: String) throws {
        var bytes = Data()
        for name in names { bytes.append(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))) }
        try bytes.write(to: URL(fileURLWithPath: target))
    }

    /// The average luma PSNR of `file` against `reference`, both from their first frame, by FFmpeg's
    /// psnr filter.
    private func psnr(_ file: String, _ reference: String) throws -> Double {
        let result = try run(
            "/usr/bin/ffmpeg",
            [
                "-hide_banner", "-nostdin", "-i", file, "-i", reference, "-lavfi",
                "[0:v]setpts=PTS-STARTPTS[a];[1:v]setpts=PTS-STARTPTS[b];[a][b]psnr", "-f", "null", "-",
            ], timeout: 300)
        try #require(result.status == 0, "\(result.stderr)")
        let line = try #require(result.stderr.split(separator: "\n").first { $0.contains("PSNR y:") })
        let field = try #require(line.split(separator: " ").first { $0.hasPrefix("y:") })
        return try #require(Double(field.dropFirst(2)), "\(line)")
    }

    /// `ffmpeg -c:v libx264` with the settings the packager encodes both variants with, the IDRs at
    /// the same 2-second segment starts.
    private func plainEncode(_ input: String, to output: String) throws {
        var arguments = ["-i", input, "-an", "-c:v", "libx264"]
        for (name, value) in WatermarkProducer.encoderOptions.sorted(by: { $0.key < $1.key }) {
            arguments += ["-" + name, value]
        }
        arguments += ["-force_key_frames", "expr:gte(t,n_forced*2)", output]
        let result = try ffmpeg(arguments, timeout: 600)
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// The detector reads the variants of the encrypted layouts its naming tests do not cover to the same
    /// pictures as the files decrypted by other tools: `openssl enc -d -aes-128-cbc` with the playlist's IV
    /// for AES-128 (MPEG-TS, and fMP4 behind its init segment), FFmpeg's MP4 demuxer for `cenc`. With
    /// the wrong key it reads other pictures, or none.
    @Test(arguments: [("ts", "aes-128"), ("fmp4", "aes-128"), ("fmp4", "cenc")])
    func theDetectorDecryptsEachLayoutsVariantsAsOtherToolsDo(container: String, encryption: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try guardPlay(
            [
                "package", fixture("clip.mp4"), "--out", output, "--container", container, "--encryption", encryption,
                "--key", testKey, "--watermark", "ab", "--watermark-key", Self.key, "--segment-duration", "2",
                "--quiet",
            ], timeout: 600)
        try #require(packaged.status == 0, "\(packaged.stderr)")
        let key = try #require([UInt8](hex: testKey))
        let asset = try #require(try WatermarkDetectionAsset.load(directory: output) { _ in key })
        #expect(asset.segments.count == 5)
        let playlist = try ParsedMediaPlaylist(
            String(contentsOfFile: output + "/video.m3u8", encoding: .utf8), name: "video.m3u8")
        let scratch = directory.path("scratch")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let segment = asset.segments[1]
        for variant in [WatermarkVariant.a, .b] {
            let file = segment.file(variant)
            var clear = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
            if encryption == "aes-128" {
                let iv = try #require(playlist.segments[1].key?["IV"]).dropFirst(2)
                let decrypted = directory.path("decrypted-\(variant.rawValue)")
                let openssl = try run(
                    "/usr/bin/openssl",
                    ["enc", "-d", "-aes-128-cbc", "-K", testKey, "-iv", String(iv), "-in", file, "-out", decrypted])
                try #require(openssl.status == 0, "\(openssl.stderr)")
                clear = [UInt8](try Data(contentsOf: URL(fileURLWithPath: decrypted)))
            }
            if container == "fmp4" {
                clear = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output + "/video_init.mp4"))) + clear
            }
            var reference = directory.path("reference-\(variant.rawValue).\(container == "ts" ? "ts" : "mp4")")
            try Data(clear).write(to: URL(fileURLWithPath: reference))
            if encryption == "cenc" {
                let remuxed = directory.path("remuxed-\(variant.rawValue).mp4")
                let result = try ffmpeg(["-decryption_key", testKey, "-i", reference, "-c", "copy", remuxed])
                try #require(result.status == 0, "\(result.stderr)")
                reference = remuxed
            }
            let expected = try WatermarkBlockMeans(path: reference)
            let read = try asset.blockMeans(segment, variant, scratch: scratch)
            #expect(read.frames.count == 60 && read.frames == expected.frames, "\(variant): \(read.frames.count)")
            let wrong = try #require(
                try WatermarkDetectionAsset.load(directory: output) { _ in key.map { $0 ^ 0x5a } })
            let misread = try? wrong.blockMeans(wrong.segments[1], variant, scratch: scratch)
            #expect(misread.map { $0.frames != expected.frames } ?? true, "\(variant) with the wrong key")
        }
    }

    @Test func writesTheContractLayout() throws {
        let directory = try TemporaryDirectory()
        let output = try packageMarked(fixture("clip.mp4"), in: directory)
        let names = try segments(output + "/video.m3u8")
        #expect(names.count == 5)
        for (index, name) in names.enumerated() {
            #expect(name == String(format: "video_%05d.a.ts", index))
            #expect(FileManager.default.fileExists(atPath: output + "/" + (try bName(name))))
        }
        let manifest = try WatermarkManifest(
            parsing: [UInt8](try Data(contentsOf: URL(fileURLWithPath: output + "/watermark.json"))))
        #expect(manifest.key.hexString == Self.key)
        #expect(manifest.blockSize == 16)
        #expect(manifest.playlists == ["video.m3u8"])
        let text = try String(contentsOfFile: output + "/watermark.json", encoding: .utf8)
        #expect(text.hasPrefix("{\"version\":1,\"scheme\":\"ab-luma\",\"key\":\"\(Self.key)\",\"blockSize\":16,"))
        // The audio is one rendition both variants share, and there is no I-frame playlist.
        let master = try String(contentsOfFile: output + "/master.m3u8", encoding: .utf8)
        #expect(master.contains("audio-1.m3u8"))
        #expect(!master.contains("I-FRAME"))
        #expect(try segments(output + "/audio-1.m3u8").allSatisfy { !$0.contains(".a.") && !$0.contains(".b.") })
    }

    @Test func variantsAreInvisibleBesideAPlainEncode() throws {
        let directory = try TemporaryDirectory()
        let output = try packageMarked(fixture("clip.mp4"), in: directory)
        let names = try segments(output + "/video.m3u8")
        try concatenate(names, in: output, to: directory.path("a.ts"))
        try concatenate(try names.map(bName), in: output, to: directory.path("b.ts"))
        try plainEncode(fixture("clip.mp4"), to: directory.path("plain.mp4"))
        let a = try psnr(directory.path("a.ts"), directory.path("plain.mp4"))
        let b = try psnr(directory.path("b.ts"), directory.path("plain.mp4"))
        #expect(a >= 45, "A: \(a) dB")
        #expect(b >= 45, "B: \(b) dB")
        // The variants differ from each other, and from the plain encode.
        let between = try psnr(directory.path("a.ts"), directory.path("b.ts"))
        #expect(between < 60, "A against B: \(between) dB")
    }

    /// Per block, the mean over a segment's pictures of decoded A minus decoded B.
    private func difference(_ a: WatermarkBlockMeans, _ b: WatermarkBlockMeans) -> [Double] {
        var sums = [Double](repeating: 0, count: a.columns * a.rows)
        for (plus, minus) in zip(a.frames, b.frames) {
            for index in sums.indices { sums[index] += Double(plus[index]) - Double(minus[index]) }
        }
        return sums
    }

    /// The normalised correlation of `values` with `signs`.
    private func correlation(_ values: [Double], _ signs: [Int8]) -> Double {
        let dot = zip(values, signs).reduce(0.0) { $0 + $1.0 * Double($1.1) }
        let norm = values.reduce(0.0) { $0 + $1 * $1 }.squareRoot() * Double(signs.count).squareRoot()
        return norm > 0 ? dot / norm : 0
    }

    @Test func variantsCarryTheirSegmentsPattern() throws {
        let directory = try TemporaryDirectory()
        let output = try packageMarked(fixture("clip.mp4"), in: directory)
        let names = try segments(output + "/video.m3u8")
        let pattern = try WatermarkPattern(key: try #require([UInt8](hex: Self.key)))
        var differences: [[Double]] = []
        var grid = (columns: 0, rows: 0)
        for name in names {
            let a = try WatermarkBlockMeans(path: output + "/" + name)
            let b = try WatermarkBlockMeans(path: output + "/" + (try bName(name)), width: a.width, height: a.height)
            #expect(a.frames.count == b.frames.count)
            differences.append(difference(a, b))
            grid = (a.columns, a.rows)
        }
        for (k, values) in differences.enumerated() {
            for j in differences.indices {
                let signs = pattern.signs(segment: j, columns: grid.columns, rows: grid.rows)
                let value = correlation(values, signs)
                if j == k {
                    #expect(value > 0.6, "A − B of segment \(k) against its own pattern: \(value)")
                } else {
                    #expect(abs(value) < 0.15, "A − B of segment \(k) against segment \(j)'s pattern: \(value)")
                }
            }
        }
    }

    @Test func readerNamesTheVariantAfterAReencodeAndAScale() throws {
        let directory = try TemporaryDirectory()
        // A 720p source, so that the copy is scaled down to 640×360.
        let source = directory.path("source.mp4")
        let made = try ffmpeg(
            [
                "-i", fixture("clip.mp4"), "-t", "4", "-vf", "scale=1280:720", "-c:v", "libx264", "-preset", "veryfast",
                "-crf", "14", "-c:a", "copy", source,
            ], timeout: 600)
        try #require(made.status == 0, "\(made.stderr)")
        let output = try packageMarked(source, in: directory)
        let names = try segments(output + "/video.m3u8")
        try #require(names.count == 2)
        for (index, name) in names.enumerated() {
            let a = output + "/" + name
            let b = output + "/" + (try bName(name))
            for (served, variant) in [(a, WatermarkVariant.a), (b, .b)] {
                let direct = try WatermarkReader.read(suspect: served, a: a, b: b)
                #expect(direct.variant == variant && abs(direct.score) > 0.9, "segment \(index) \(variant): \(direct)")
                let copy = directory.path("copy-\(index)-\(variant).mp4")
                let encoded = try ffmpeg(
                    ["-i", served, "-vf", "scale=640:360", "-c:v", "libx264", "-crf", "28", "-an", copy], timeout: 600)
                try #require(encoded.status == 0, "\(encoded.stderr)")
                let reading = try WatermarkReader.read(suspect: copy, a: a, b: b)
                #expect(reading.variant == variant, "segment \(index), served \(variant): \(reading)")
                #expect(abs(reading.score) > 0.3, "segment \(index), served \(variant): \(reading)")
            }
        }
    }

    /// The video packets of `file`: pts, dts and duration, one line each.
    private func packetTimes(_ file: String) throws -> String {
        let result = try run(
            "/usr/bin/ffprobe",
            ["-v", "error", "-select_streams", "v", "-show_entries", "packet=pts,dts,duration", "-of", "csv=p=0", file])
        try #require(result.status == 0, "\(result.stderr)")
        return result.stdout
    }

    @Test func variantsShareEveryTimestamp() throws {
        let directory = try TemporaryDirectory()
        let output = try packageMarked(fixture("clip.mp4"), in: directory)
        for name in try segments(output + "/video.m3u8") {
            let a = try packetTimes(output + "/" + name)
            let b = try packetTimes(output + "/" + (try bName(name)))
            #expect(!a.isEmpty)
            #expect(a == b, "\(name)")
        }
    }

    /// `verify --source` of the encrypted output `output` (key file beside it) passes and names variant B.
    private func expectBothVariantsVerify(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let checked = try guardPlay(
            ["verify", output, "--key-file", output + ".key", "--source", fixture("clip.mp4")], timeout: 600)
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)", sourceLocation: sourceLocation)
        #expect(checked.stdout.contains("variant B"), "\(checked.stdout)", sourceLocation: sourceLocation)
    }

    @Test func encryptedVariantsVerify() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try package(
            fixture("clip.mp4"), output, ["--watermark", "ab", "--watermark-key", Self.key, "--segment-duration", "2"])
        try #require(packaged.status == 0, "\(packaged.stderr)")
        let plain = try guardPlay(["verify", output, "--key-file", output + ".key"], timeout: 600)
        #expect(plain.status == 0, "\(plain.stdout)\(plain.stderr)")
        try expectBothVariantsVerify(output)
    }

    @Test func fragmentedVariantsShareTheirInitSegmentAndTimestampsAndVerify() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try package(
            fixture("clip.mp4"), output,
            [
                "--container", "fmp4", "--watermark", "ab", "--watermark-key", Self.key, "--segment-duration", "2",
            ])
        try #require(packaged.status == 0, "\(packaged.stderr)")
        let playlist = try String(contentsOfFile: output + "/video.m3u8", encoding: .utf8)
        #expect(playlist.contains("#EXT-X-MAP:URI=\"video_init.mp4\""))
        let names = try segments(output + "/video.m3u8")
        #expect(names.count == 5)
        let initSegment = try Data(contentsOf: URL(fileURLWithPath: output + "/video_init.mp4"))
        for (index, name) in names.enumerated() {
            #expect(name == String(format: "video_%05d.a.m4s", index))
            // Each variant decodes (decrypted by FFmpeg) behind the one init segment, with A's timestamps.
            var times: [String] = []
            for variant in [name, try bName(name)] {
                let joined = directory.path("joined-\(variant).mp4")
                var bytes = initSegment
                bytes.append(try Data(contentsOf: URL(fileURLWithPath: output + "/" + variant)))
                try bytes.write(to: URL(fileURLWithPath: joined))
                let result = try run(
                    "/usr/bin/ffprobe",
                    [
                        "-v", "error", "-decryption_key", testKey, "-select_streams", "v", "-show_entries",
                        "packet=pts,dts,duration", "-of", "csv=p=0", joined,
                    ])
                #expect(result.status == 0, "\(result.stderr)")
                times.append(result.stdout)
            }
            #expect(!times[0].isEmpty && times[0] == times[1], "\(name)")
        }
        let manifest = try String(contentsOfFile: output + "/manifest.mpd", encoding: .utf8)
        #expect(manifest.contains("media=\"video_$Number%05d$.a.m4s\""))
        #expect(FileManager.default.fileExists(atPath: output + "/watermark.json"))
        try expectBothVariantsVerify(output)
    }

    @Test func refusesWhatItCannotMark() throws {
        let directory = try TemporaryDirectory()
        func refusal(_ input: String, _ extra: [String], status: Int32, says fragment: String) throws {
            let output = directory.path("out-\(UUID().uuidString)")
            let result = try guardPlay(["package", input, "--out", output, "--quiet"] + extra)
            #expect(result.status == status, "\(result.stderr)")
            #expect(result.stderr.contains(fragment), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output))
            #expect(!FileManager.default.fileExists(atPath: output + ".key"))
        }
        try refusal(fixture("song.m4a"), ["--watermark", "ab"], status: 3, says: "audio only")
        try refusal(fixture("qr-still.png"), ["--watermark", "ab"], status: 3, says: "still image")
        try refusal(fixture("hevc.mp4"), ["--watermark", "ab"], status: 16, says: "H.264")
        try refusal(fixture("clip.mp4"), ["--watermark", "abc"], status: 3, says: "--watermark")
        try refusal(fixture("clip.mp4"), ["--watermark-key", Self.key], status: 3, says: "--watermark ab")
        try refusal(fixture("clip.mp4"), ["--watermark", "ab", "--watermark-key", "00"], status: 3, says: "32 hex")
    }
}
