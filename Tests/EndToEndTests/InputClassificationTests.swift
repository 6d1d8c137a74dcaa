import Foundation
import Testing

/// Issue 9 §6 "Exit codes": one classification of input failures (MediaCore's
/// `InputContext.classifyOpenFailure`) serves the player, `package` and `verify --source`, so a
/// truncated file gets the same code, 14, from each.
@Suite(.hangGuard) struct InputClassificationTests {
    enum Truncation: String, CaseIterable, Sendable {
        /// clip.mp4 cut at half: its index (first) survives, half its data does not.
        case halfMP4
        /// song.m4a cut at half: its index, at the end, is lost.
        case halfM4A
        /// A transport stream holding one packet, its PAT: no PMT, no data.
        case patOnlyTS
        /// video-only.mp4 whose `stco` points past the end of the file.
        case chunkOffsetPastEnd

        /// The fixture it was made from, whose packaged output `verify --source` compares with it.
        var origin: String {
            switch self {
            case .halfMP4, .patOnlyTS: fixture("clip.mp4")
            case .halfM4A: fixture("song.m4a")
            case .chunkOffsetPastEnd: fixture("video-only.mp4")
            }
        }

        func make(in directory: TemporaryDirectory) throws -> String {
            switch self {
            case .halfMP4, .halfM4A:
                let source = fixture(self == .halfMP4 ? "clip.mp4" : "song.m4a")
                let data = try Data(contentsOf: URL(fileURLWithPath: source))
                let path = directory.path(self == .halfMP4 ? "half.mp4" : "half.m4a")
                #expect(FileManager.default.createFile(atPath: path, contents: data.prefix(data.count / 2)))
                return path
            case .patOnlyTS:
                let ts = directory.path("whole.ts")
                let made = try ffmpeg(["-i", fixture("clip.mp4"), "-t", "1", "-c", "copy", "-f", "mpegts", ts])
                try #require(made.status == 0, "\(made.stderr)")
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ts)))
                let pat = try #require(
                    stride(from: 0, to: bytes.count - 187, by: 188).first {
                        bytes[$0 + 1] & 0x1F == 0 && bytes[$0 + 2] == 0
                    },
                    "no PAT in \(ts)")
                let path = directory.path("pat-only.ts")
                #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes[pat..<(pat + 188)])))
                return path
            case .chunkOffsetPastEnd:
                let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture("video-only.mp4"))))
                let type = try #require(file.firstRange(of: Array("stco".utf8)), "no stco")
                let count = file[(type.upperBound + 4)..<(type.upperBound + 8)].reduce(0) { $0 << 8 | Int($1) }
                var body: [UInt8] = [
                    0, 0, 0, 0, UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF),
                    UInt8(count & 0xFF),
                ]
                for entry in 0..<count {
                    let offset = UInt32(0x7FFF_0000) + UInt32(entry) * 1000
                    body += [
                        UInt8(offset >> 24), UInt8((offset >> 16) & 0xFF), UInt8((offset >> 8) & 0xFF),
                        UInt8(offset & 0xFF),
                    ]
                }
                let path = directory.path("stco-past-end.mp4")
                let rewritten = try MP4Boxes.replacing("stco", with: body, in: file)
                #expect(FileManager.default.createFile(atPath: path, contents: Data(rewritten)))
                return path
            }
        }
    }

    enum Command: String, CaseIterable, Sendable {
        case play, package, verify
    }

    @Test(arguments: Truncation.allCases, Command.allCases)
    func aTruncatedFileIsTruncatedForEveryCommand(_ truncation: Truncation, _ command: Command) throws {
        let directory = try TemporaryDirectory()
        let input = try truncation.make(in: directory)
        let result: ProcessResult
        switch command {
        case .play:
            result = try guardPlay([input, "--output", directory.path("out.mkv"), "--status", "none"])
        case .package:
            result = try guardPlay(["package", input, "--out", directory.path("out"), "--encryption", "none"])
        case .verify:
            let out = directory.path("clean")
            let packaged = try guardPlay([
                "package", truncation.origin, "--out", out, "--encryption", "none", "--quiet",
            ])
            try #require(packaged.status == 0, "\(packaged.stderr)")
            result = try guardPlay(["verify", out, "--source", input])
        }
        #expect(result.status == 14, "\(command) \(truncation): \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("truncated") || result.stderr.contains("cut short"), "\(result.stderr)")
    }
}
