import Foundation
import Testing

/// The fixed key and IV the packaging tests use, so FFmpeg sees a constant explicit IV.
let testKey = "00112233445566778899aabbccddeeff"
let testIV = "0f0e0d0c0b0a09080706050403020100"

/// Every media fixture in `media/` (everything but the script that makes them).
let mediaFixtures: [String] = {
    let names =
        (try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("media").path))
        ?? []
    return names.filter { !$0.hasSuffix(".sh") && !$0.hasPrefix(".") }.sorted()
}()

/// Runs the ffmpeg CLI quietly.
@discardableResult
func ffmpeg(_ arguments: [String], timeout: TimeInterval = 120) throws -> ProcessResult {
    try run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + arguments, timeout: timeout)
}

/// `guard-play package INPUT --out OUT` with the test key and IV and `extra` options; the key file
/// defaults to OUT.key.
@discardableResult
func package(_ input: String, _ output: String, _ extra: [String] = []) throws -> ProcessResult {
    try guardPlay(["package", input, "--out", output, "--key", testKey, "--iv", testIV, "--quiet"] + extra)
}

/// One stream of a framemd5 listing: its media type and the hash of every frame, in order.
struct FrameHashes {
    var mediaType: String
    var hashes: [String]
}

/// Decodes `input` with ffmpeg (`-f framemd5`, every stream, no frame-rate conversion) and returns the
/// streams in ffmpeg's order.
func frameHashes(_ input: String, options: [String] = []) throws -> [FrameHashes] {
    let directory = try TemporaryDirectory()
    let listing = directory.path("frames.md5")
    let result = try ffmpeg(
        options + ["-i", input, "-map", "0", "-fps_mode", "passthrough", "-f", "framemd5", listing])
    guard result.status == 0 else {
        Issue.record("ffmpeg could not decode \(input): \(result.stderr.prefix(500))")
        return []
    }
    var streams: [Int: FrameHashes] = [:]
    for line in try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n") {
        if line.hasPrefix("#media_type") {
            let parts = line.dropFirst("#media_type ".count).split(separator: ":")
            streams[Int(parts[0])!] = FrameHashes(mediaType: parts[1].trimmingCharacters(in: .whitespaces), hashes: [])
        } else if !line.hasPrefix("#") {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            streams[Int(fields[0])!]?.hashes.append(fields[5])
        }
    }
    return streams.keys.sorted().map { streams[$0]! }
}

/// How a decoded stream compares with a reference: frames in each, and frames equal when the
/// reference is shifted by `offset` (the source's edit list drops the AAC priming frame FFmpeg
/// decodes from TS).
struct FrameComparison: Equatable, CustomStringConvertible {
    var decoded: Int
    var reference: Int
    var offset: Int
    var equal: Int
    /// Indices of decoded frames that differ.
    var differing: [Int]

    init(_ decoded: [String], _ reference: [String], offset: Int) {
        self.decoded = decoded.count
        self.reference = reference.count
        self.offset = offset
        var equal = 0
        var differing: [Int] = []
        for index in decoded.indices {
            let other = index + offset
            if other >= 0 && other < reference.count && decoded[index] == reference[other] {
                equal += 1
            } else {
                differing.append(index)
            }
        }
        self.equal = equal
        self.differing = differing
    }

    var description: String { "\(decoded) decoded, \(reference) reference, \(equal) equal, differing \(differing)" }
}

/// Snapshot of a directory's files and contents, to show an old output was left untouched.
func snapshot(_ directory: String) throws -> [String: Data] {
    var files: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
        files[name] = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
    }
    return files
}

/// The hidden build directories (`.NAME.guard-play-PID-*.partial`) beside `output`.
func partialSiblings(of output: String) -> [String] {
    let parent = (output as NSString).deletingLastPathComponent
    let name = (output as NSString).lastPathComponent
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
    return entries.filter { $0.hasPrefix(".\(name).guard-play-") && $0.hasSuffix(".partial") }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes; returns whether it held.
func waitUntil(timeout: TimeInterval = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
