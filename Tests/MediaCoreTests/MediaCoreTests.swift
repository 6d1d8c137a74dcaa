import Foundation
import MediaCore
import Testing

/// The fixture directory, found from this file's path so tests run from any working directory.
let mediaDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("media")

@Suite struct InputContextTests {
    @Test func opensAndListsStreams() throws {
        let input = try InputContext(path: mediaDirectory.appendingPathComponent("clip.mp4").path)
        #expect(input.streams.count == 2)
        let video = try #require(input.streams.first { $0.mediaType == .video })
        #expect(video.codecName == "h264")
        #expect(video.width == 640 && video.height == 360)
        #expect(!video.extradata.isEmpty)
        let audio = try #require(input.streams.first { $0.mediaType == .audio })
        #expect(audio.codecName == "aac" && audio.sampleRate == 48_000 && audio.channelCount == 2)
        #expect(abs((input.durationSeconds ?? 0) - 10) < 0.2)
    }

    @Test func missingFileIsNotFound() {
        #expect {
            try InputContext(path: "/nonexistent/song.m4a")
        } throws: { error in
            (error as? MediaError)?.kind == .notFound
        }
    }

    @Test func decodesEveryAudioSample() throws {
        let input = try InputContext(path: mediaDirectory.appendingPathComponent("song.m4a").path)
        let index = try #require(input.bestStream(.audio))
        let decoder = try input.makeDecoder(streamIndex: index)
        let packet = Packet()
        let frame = Frame()
        var samples = 0
        var peak: Float = 0
        func drain() throws {
            while try decoder.receive(into: frame) == .output {
                samples += frame.sampleCount
                #expect(frame.sampleFormat == .floatPlanar)
                frame.withUnsafeMutableAudioPlanes { planes in
                    let values = UnsafeBufferPointer(
                        start: UnsafeRawPointer(planes[0].base).assumingMemoryBound(to: Float.self),
                        count: frame.sampleCount)
                    peak = max(peak, values.map(abs).max() ?? 0)
                }
            }
        }
        while try input.read(into: packet) == .packet {
            guard packet.streamIndex == index else { continue }
            _ = try decoder.send(packet)
            try drain()
        }
        _ = try decoder.send(nil)
        try drain()
        // 10 s at 44.1 kHz; the AAC encoder's priming is trimmed by the demuxer's edit list.
        #expect(abs(samples - 441_000) < 2048)
        #expect(peak > 0.1)
    }

    @Test func resamplesAndEncodesToWav() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("out.wav").path

        let input = try InputContext(path: mediaDirectory.appendingPathComponent("voice-22k-mono.mp3").path)
        let index = try #require(input.bestStream(.audio))
        let decoder = try input.makeDecoder(streamIndex: index)
        let output = try OutputContext(path: path)
        let encoder = try Encoder(
            settings: EncoderSettings(
                codecName: "pcm_s16le", media: .audio(sampleRate: 48_000, channelCount: 2, sampleFormat: .s16)))
        let stream = try output.addStream(for: encoder)
        try output.open()
        let resampler = Resampler(output: encoder.audioFormat)
        let packet = Packet()
        let frame = Frame()
        var written = 0
        func drain() throws {
            while try decoder.receive(into: frame) == .output {
                let converted = try resampler.convert(frame)
                converted.pts = Int64(written)
                written += converted.sampleCount
                try encoder.encode(converted) { try output.write($0, stream: stream, from: encoder.timeBase) }
            }
        }
        while try input.read(into: packet) == .packet {
            _ = try decoder.send(packet)
            try drain()
        }
        _ = try decoder.send(nil)
        try drain()
        try encoder.encode(nil) { try output.write($0, stream: stream, from: encoder.timeBase) }
        try output.finish()

        let check = try InputContext(path: path)
        #expect(check.streams.first?.sampleRate == 48_000)
        #expect(check.streams.first?.channelCount == 2)
        #expect(abs((check.durationSeconds ?? 0) - 4) < 0.1)
    }
}

@Suite struct InputFileTests {
    @Test func classifiesPathsBeforeFFmpegOpensThem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func write(_ name: String, _ bytes: [UInt8]) -> String {
            let path = directory.appendingPathComponent(name).path
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
            return path
        }
        #expect(
            InputFile.problem(at: directory.appendingPathComponent("missing").path)
                == .unreadable(reason: "No such file or directory"))
        #expect(InputFile.problem(at: directory.path) == .unreadable(reason: "is a directory"))
        #expect(InputFile.problem(at: write("empty.m4a", [])) == .empty)
        #expect(InputFile.problem(at: write("notes.m4a", Array("Ünïcode notes\nline two\n".utf8))) == .text)
        #expect(InputFile.problem(at: write("list.m3u8", Array("#EXTM3U\n#EXT-X-VERSION:3\n".utf8))) == nil)
        #expect(InputFile.problem(at: mediaDirectory.appendingPathComponent("song.m4a").path) == nil)
        #expect(InputFile.problem(at: "http://127.0.0.1:1/master.m3u8") == nil)
    }

    @Test func textHeuristic() {
        #expect(InputFile.looksLikeText(Array("plain text\twith tabs\r\n".utf8)))
        // A multi-byte character cut by the end of the sample is still text.
        #expect(InputFile.looksLikeText(Array("caf".utf8) + [0xC3]))
        #expect(!InputFile.looksLikeText([0x00, 0x00, 0x00, 0x20, 0x66, 0x74, 0x79, 0x70]))
        #expect(!InputFile.looksLikeText([0xFF, 0xF1, 0x50, 0x80, 0x2E, 0x7F, 0xFC]))
        #expect(!InputFile.looksLikeText(Array(repeating: 0x01, count: 10) + Array("mostly text".utf8)))
        #expect(!InputFile.looksLikeText([]))
    }
}
