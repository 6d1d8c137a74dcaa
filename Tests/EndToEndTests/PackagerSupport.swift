import Foundation
import Testing

/// The fixed key and IV the packaging tests use, so FFmpeg sees a constant explicit IV.
let testKey = "00112233445566778899aabbccddeeff"
let testIV = "0f0e0d0c0b0a09080706050403020100"

/// Every media fixture in `media/` (everything but the script that makes them). When the folder cannot
/// be listed this is empty, and `PackageRoundTripTests.findsTheFixtures` fails saying so.
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

/// The hashes of the `mediaType` frames ffmpeg decodes from the DASH `manifest` under a key that is not
/// the content key (empty when it decodes none): the negative control of a decryption comparison.
func hashesUnderWrongKey(_ manifest: String, mediaType: String) throws -> [String] {
    let wrong = try frameHashes(
        manifest, options: ["-cenc_decryption_key", "ffeeddccbbaa99887766554433221100"], mayFail: true)
    return wrong.first { $0.mediaType == mediaType }?.hashes ?? []
}

/// Decodes `input` with ffmpeg (`-f framemd5`, every stream, no frame-rate conversion) and returns the
/// streams in ffmpeg's order; a failed decode is a test issue unless `mayFail` (a negative control).
func frameHashes(_ input: String, options: [String] = [], mayFail: Bool = false) throws -> [FrameHashes] {
    let directory = try TemporaryDirectory()
    let listing = directory.path("frames.md5")
    let result = try ffmpeg(
        options + ["-i", input, "-map", "0", "-fps_mode", "passthrough", "-f", "framemd5", listing])
    guard result.status == 0 else {
        if !mayFail { Issue.record("ffmpeg could not decode \(input): \(result.stderr.prefix(500))") }
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

/// MP4 boxes, just enough to rewrite one: the reviewer's hostile input is an FFmpeg-made `.m4a` whose
/// `esds` is replaced, so the test makes it fresh instead of committing a binary.
enum MP4Boxes {
    /// Boxes that hold only boxes, and those with a fixed header before their child boxes.
    private static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "udta"]
    private static let headers: [String: Int] = ["stsd": 8, "mp4a": 28, "avc1": 78]

    /// `file` with the body of every box of type `type` replaced by `body`, the sizes of its parents
    /// updated; the `mdat` must come before the `moov`, so no chunk offset moves.
    static func replacing(_ type: String, with body: [UInt8], in file: [UInt8]) throws -> [UInt8] {
        let order = try boxes(file[...]).map(\.type)
        try #require(
            order.firstIndex(of: "mdat") ?? .max < order.firstIndex(of: "moov") ?? -1, "mdat before moov: \(order)")
        return try rewrite(file[...], type, body)
    }

    static func boxes(_ bytes: ArraySlice<UInt8>) throws -> [(type: String, body: ArraySlice<UInt8>)] {
        var result: [(type: String, body: ArraySlice<UInt8>)] = []
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            try #require(bytes.endIndex - offset >= 8, "a box header is cut short at \(offset)")
            let size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            try #require(size >= 8 && size <= bytes.endIndex - offset, "box \(type) of \(size) bytes at \(offset)")
            result.append((type, bytes[(offset + 8)..<(offset + size)]))
            offset += size
        }
        return result
    }

    private static func rewrite(_ bytes: ArraySlice<UInt8>, _ target: String, _ replacement: [UInt8]) throws
        -> [UInt8]
    {
        var out: [UInt8] = []
        for (type, body) in try boxes(bytes) {
            var newBody: [UInt8]
            if type == target {
                newBody = replacement
            } else if containers.contains(type) {
                newBody = try rewrite(body, target, replacement)
            } else if let header = headers[type] {
                newBody = Array(body.prefix(header)) + (try rewrite(body.dropFirst(header), target, replacement))
            } else {
                newBody = Array(body)
            }
            let size = UInt32(8 + newBody.count)
            out += [UInt8(size >> 24), UInt8((size >> 16) & 0xFF), UInt8((size >> 8) & 0xFF), UInt8(size & 0xFF)]
            out += Array(type.utf8) + newBody
        }
        return out
    }

    /// An `esds` body (ISO/IEC 14496-1 descriptors with 4-byte lengths) carrying `config` as the
    /// AudioSpecificConfig of an AAC stream.
    static func esds(audioSpecificConfig config: [UInt8]) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ payload: [UInt8]) -> [UInt8] {
            let length = payload.count
            return [
                tag, 0x80 | UInt8((length >> 21) & 0x7F), 0x80 | UInt8((length >> 14) & 0x7F),
                0x80 | UInt8((length >> 7) & 0x7F), UInt8(length & 0x7F),
            ] + payload
        }
        // DecoderConfigDescriptor: MPEG-4 audio (0x40), audio stream (0x15), buffer size 0, 64 kb/s.
        let decoderConfig = descriptor(
            4, [0x40, 0x15, 0, 0, 0, 0, 0, 0xFA, 0, 0, 0, 0xFA, 0] + descriptor(5, config))
        let elementary = descriptor(3, [0, 1, 0] + decoderConfig + descriptor(6, [2]))
        return [0, 0, 0, 0] + elementary
    }
}
