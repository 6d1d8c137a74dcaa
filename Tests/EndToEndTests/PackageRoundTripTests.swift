import Foundation
import Testing

/// Every fixture packaged and verified bit for bit against its source by GuardPlay's own decryptor.
@Suite(.timeLimit(.minutes(30))) struct PackageRoundTripTests {
    @Test func findsTheFixtures() throws {
        // An unreadable media/ would otherwise turn the round trip below into zero cases, which pass.
        try #require(!mediaFixtures.isEmpty, "no fixtures listed in \(fixture(""))")
        #expect(mediaFixtures.contains("clip.mp4") && mediaFixtures.contains("qr-still.png"), "\(mediaFixtures)")
    }

    @Test(arguments: mediaFixtures)
    func packagesAndVerifiesEveryFixture(_ name: String) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try package(fixture(name), output)
        #expect(packaged.status == 0, "\(packaged.stderr)")
        #expect(packaged.stdout.contains("packaged"))

        // The key is beside the output, 0600, and nowhere inside it.
        let key = try FileManager.default.attributesOfItem(atPath: output + ".key")
        #expect((key[.posixPermissions] as? Int) == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: output + ".key")) == Data(hexKey(testKey)))
        let published = try FileManager.default.contentsOfDirectory(atPath: output)
        #expect(published.contains("master.m3u8"))
        #expect(!published.contains { $0.hasSuffix(".key") })
        #expect(partialSiblings(of: output).isEmpty)

        let verified = try guardPlay(["verify", output, "--source", fixture(name), "--key-file", output + ".key"])
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("OK: every access unit equals the source"))
        let streams = verified.stdout.split(separator: "\n").filter { $0.contains(" equal ") }
        #expect(!streams.isEmpty)
        for line in streams {
            // "frames N  decrypted D  equal E/N (source S)": every frame equal, and as many as the source.
            let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }.suffix(4)
            let values = Array(numbers)
            #expect(values.count == 4 && values[1] == values[2] && values[2] == values[3], "\(line)")
        }
    }

    @Test(arguments: [
        ("clip.mp4", ["--encryption", "aes-128"]), ("clip.mp4", ["--encryption", "none"]),
        ("clip.mp4", ["--key-format", "fairplay"]), ("clip.mp4", ["--segment-duration", "2"]),
        ("song.m4a", ["--audio-format", "packed"]), ("clip-eac3.mp4", ["--audio-format", "packed"]),
        ("dual-audio.mp4", ["--audio-format", "packed"]), ("voice-22k-mono.mp3", ["--segment-duration", "1"]),
    ])
    func verifiesOtherModes(_ name: String, _ options: [String]) throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try package(fixture(name), output, options)
        #expect(packaged.status == 0, "\(packaged.stderr)")
        var verifyArguments = ["verify", output, "--source", fixture(name)]
        if !options.contains("none") { verifyArguments += ["--key", testKey] }
        let verified = try guardPlay(verifyArguments)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("OK: every access unit equals the source"))
    }

    /// An AAC stream whose AudioSpecificConfig (`12 10`, AAC-LC 44.1 kHz stereo) is followed by padding
    /// in the `esds`: 244 bytes of it and more used to overflow a one-byte length in the PMT and kill the
    /// process (and with it the gateway, which packages in process). Only the two bytes the config
    /// uses are signalled.
    @Test(arguments: [244, 300, 4_096])
    func packagesAACWhoseConfigIsPadded(_ padding: Int) throws {
        let directory = try TemporaryDirectory()
        let plain = directory.path("plain.m4a")
        let made = try ffmpeg([
            "-f", "lavfi", "-i", "sine=frequency=440:duration=1:sample_rate=44100", "-ac", "2", "-c:a", "aac", plain,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        let hostile = directory.path("padded.m4a")
        let esds = MP4Boxes.esds(audioSpecificConfig: [0x12, 0x10] + [UInt8](repeating: 0, count: padding))
        let bytes = try MP4Boxes.replacing(
            "esds", with: esds, in: [UInt8](try Data(contentsOf: URL(fileURLWithPath: plain))))
        try Data(bytes).write(to: URL(fileURLWithPath: hostile))

        let output = directory.path("out")
        let packaged = try package(hostile, output)
        #expect(packaged.status == 0, "\(packaged.stderr)")
        #expect(partialSiblings(of: output).isEmpty)
        let verified = try guardPlay(["verify", output, "--source", hostile, "--key-file", output + ".key"])
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("OK: every access unit equals the source"))

        // The PMT (the segment's second packet) signals 'apad': audio_type zaac, priming 0, version 1,
        // then setup_data_length 2 and the config's two bytes, no padding.
        let segment = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output + "/audio_00000.ts")))
        let pmt = Array(segment[188..<376])
        let apad = try #require(pmt.indices.first { Array(pmt[$0..<min($0 + 4, pmt.count)]) == Array("apad".utf8) })
        #expect(Array(pmt[(apad + 4)..<(apad + 14)]) == Array("zaac".utf8) + [0, 0, 1, 2, 0x12, 0x10])
        #expect(pmt[apad - 1] == 14, "registration descriptor length")
    }

    @Test func writesTheMasterAndMediaPlaylistsTheIssueAsksFor() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("clip")
        let packaged = try package(
            fixture("clip.mp4"), output, ["--key-uri", "https://gw.example.com/v1/keys/{kid}", "--key-id", testIV])
        #expect(packaged.status == 0, "\(packaged.stderr)")
        let master = try String(contentsOfFile: output + "/master.m3u8", encoding: .utf8)
        #expect(master.contains("CODECS=\"avc1.64001e,mp4a.40.2\""))
        #expect(master.contains("RESOLUTION=640x360,FRAME-RATE=30.000"))
        #expect(master.contains("AVERAGE-BANDWIDTH="))
        #expect(master.contains("#EXT-X-I-FRAME-STREAM-INF:") && master.contains("URI=\"iframes.m3u8\""))
        let media = try String(contentsOfFile: output + "/video.m3u8", encoding: .utf8)
        #expect(media.contains("#EXT-X-VERSION:5\n#EXT-X-TARGETDURATION:6\n"))
        #expect(media.contains("#EXT-X-INDEPENDENT-SEGMENTS"))
        #expect(
            media.contains(
                "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"https://gw.example.com/v1/keys/\(testIV)\",IV=0x\(testIV.uppercased())"
            ))
        // 10 s with a 2 s GOP: cut at the IDR at 6 s, the first segment also holding the AAC priming.
        #expect(media.contains("#EXTINF:6.021333,\nvideo_00000.ts\n#EXTINF:4.000000,\nvideo_00001.ts\n"))
        let iFrames = try String(contentsOfFile: output + "/iframes.m3u8", encoding: .utf8)
        #expect(
            iFrames.contains("#EXT-X-I-FRAMES-ONLY") && iFrames.components(separatedBy: "#EXT-X-BYTERANGE:").count == 6)

        let dual = directory.path("dual")
        #expect(try package(fixture("dual-audio.mp4"), dual).status == 0)
        let dualMaster = try String(contentsOfFile: dual + "/master.m3u8", encoding: .utf8)
        #expect(dualMaster.contains("TYPE=AUDIO,GROUP-ID=\"audio\",LANGUAGE=\"en\",NAME=\"English\",DEFAULT=YES"))
        #expect(dualMaster.contains("LANGUAGE=\"fr\",NAME=\"French\",DEFAULT=NO"))
        #expect(dualMaster.contains("AUDIO=\"audio\""))
    }

    @Test func writesFairPlayKeyLines() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try package(fixture("clip.mp4"), output, ["--key-format", "fairplay", "--key-id", testIV])
        #expect(packaged.status == 0, "\(packaged.stderr)")
        let keyLine =
            "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://\(testIV)\",IV=0x\(testIV.uppercased()),"
            + "KEYFORMAT=\"com.apple.streamingkeydelivery\",KEYFORMATVERSIONS=\"1\"\n"
        for playlist in ["video.m3u8", "iframes.m3u8"] {
            let text = try String(contentsOfFile: output + "/" + playlist, encoding: .utf8)
            #expect(text.components(separatedBy: keyLine).count == 2, "\(playlist): \(text.prefix(600))")
            #expect(text.contains("#EXT-X-VERSION:5\n"))
        }
    }

    /// `--still-duration` sets how long the video made from a still runs: 3 s at 25 fps is 75 frames.
    @Test func honoursTheStillDuration() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try package(fixture("qr-still.png"), output, ["--still-duration", "3"])
        #expect(packaged.status == 0, "\(packaged.stderr)")
        let media = try String(contentsOfFile: output + "/video.m3u8", encoding: .utf8)
        #expect(media.contains("#EXTINF:3.000000,\nvideo_00000.ts\n#EXT-X-ENDLIST"), "\(media)")
        let verified = try guardPlay(["verify", output, "--source", fixture("qr-still.png"), "--key", testKey])
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.stdout.contains("video h264  frames 75  "), "\(verified.stdout)")
        let decoded = try frameHashes(output + "/master.m3u8", options: ["-allowed_extensions", "ALL"])
        #expect(decoded.map(\.hashes.count) == [75])
    }

    @Test func acceptsAnnexBInputFromATransportStream() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("clip.ts")
        #expect(try ffmpeg(["-i", fixture("clip.mp4"), "-c", "copy", "-f", "mpegts", input]).status == 0)
        let output = directory.path("out")
        let packaged = try package(input, output)
        #expect(packaged.status == 0, "\(packaged.stderr)")
        let verified = try guardPlay(["verify", output, "--source", input, "--key", testKey])
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.stdout.contains("video h264  frames 300"))
    }

    @Test func printsNoticesAndAJSONResult() throws {
        let directory = try TemporaryDirectory()
        let result = try guardPlay([
            "package", fixture("voice-22k-mono.mp3"), "--out", directory.path("voice"), "--json",
        ])
        #expect(result.status == 0)
        #expect(result.stderr.contains("notice: transcoding mp3 audio (stream 0) to AAC-LC"))
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(json?["encryption"] as? String == "sample-aes")
        #expect((json?["keyId"] as? String)?.count == 32)
        #expect(json?["key"] == nil)  // the key goes to the key file only
    }
}

func hexKey(_ text: String) -> [UInt8] {
    stride(from: 0, to: text.count, by: 2).map { offset in
        let start = text.index(text.startIndex, offsetBy: offset)
        return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16)!
    }
}
