import Foundation
import ProcessTestSupport
import Testing

@testable import MediaFormats

/// A short HEVC clip encoded by the ffmpeg CLI (libx265) and FFmpeg's own reading of its slice segment
/// headers: `trace_headers` prints every syntax element with its RBSP bit position, so where
/// `byte_alignment()` ends is where slice data begins. That is the oracle the parser is held to.
struct EncodedClip {
    /// The NAL units in stream order (stored bytes, header included).
    var nalUnits: [[UInt8]]
    /// For each VCL NAL unit in order, FFmpeg's slice segment header length in RBSP bits (NAL header
    /// included).
    var oracleBits: [Int]

    /// Encodes one second of test pattern with `arguments` added to the ffmpeg command line.
    init(_ name: String, _ arguments: [String]) throws {
        let clip = try Self.encode("hevc-\(name)", encoder: "libx265", format: "hevc", arguments)
        nalUnits = clip.nalUnits
        oracleBits = Self.sliceHeaderEnds(clip.trace)
    }

    /// Encodes 0.8 s of test pattern with `encoder` and `arguments` as a raw `format` stream; returns its
    /// NAL units and FFmpeg's `trace_headers` of it.
    static func encode(_ name: String, encoder: String, format: String, _ arguments: [String]) throws -> (
        nalUnits: [[UInt8]], trace: String
    ) {
        let directory = try Self.scratchDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clip = directory + "/clip." + format
        try Self.run(
            [
                "/usr/bin/ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                "testsrc2=size=352x288:rate=25", "-t", "0.8",
            ] + arguments + ["-c:v", encoder, "-f", format, "-y", clip], errors: directory + "/encode.txt")
        let stream = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clip)))
        return (
            stream.withUnsafeBytes { NALUnitSplitter.annexB($0) }.map { Array(stream[$0]) },
            try trace(clip, format: format, in: directory)
        )
    }

    /// FFmpeg's `trace_headers` of the raw `format` stream `clip`, written in `directory` on the way.
    private static func trace(_ clip: String, format: String, in directory: String) throws -> String {
        let trace = directory + "/trace.txt"
        try Self.run(
            [
                "/usr/bin/ffmpeg", "-nostdin", "-nostats", "-hide_banner", "-f", format, "-i", clip, "-c:v", "copy",
                "-bsf:v", "trace_headers", "-f", "null", "-",
            ], errors: trace)
        return try String(contentsOfFile: trace, encoding: .utf8)
    }

    /// A stream of the given NAL units, written as Annex B, with FFmpeg's trace of it.
    init(name: String, nalUnits: [[UInt8]]) throws {
        let directory = try Self.scratchDirectory("hevc-" + name)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clip = directory + "/clip.hevc"
        try Data(nalUnits.flatMap { [0, 0, 0, 1] + $0 }).write(to: URL(fileURLWithPath: clip))
        self.nalUnits = nalUnits
        oracleBits = Self.sliceHeaderEnds(try Self.trace(clip, format: "hevc", in: directory))
    }

    /// A new empty directory for clip `name`, which the caller removes.
    private static func scratchDirectory(_ name: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "guardplay-\(getpid())-\(name)"
        ).path
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Each slice segment header's end: one past the position of its last `byte_alignment()` bit.
    static func sliceHeaderEnds(_ trace: String) -> [Int] {
        var ends: [Int] = []
        var inSlice = false
        var last: Int?
        for line in trace.split(separator: "\n") {
            if line.hasSuffix("Slice Segment Header") {
                if let last { ends.append(last) }
                inSlice = true
                last = nil
                continue
            }
            if line.contains("] Packet:") || line.hasSuffix("Parameter Set") {
                if inSlice, let end = last { ends.append(end) }
                inSlice = false
                last = nil
                continue
            }
            guard inSlice, line.contains("alignment_bit_equal_to_") else { continue }
            let fields = line.split(separator: "]", maxSplits: 1).last?.split(separator: " ") ?? []
            if let position = fields.first.flatMap({ Int($0) }) { last = position + 1 }
        }
        if inSlice, let last { ends.append(last) }
        return ends
    }

    static func run(_ arguments: [String], errors: String) throws {
        let process = try SpawnedProcess(arguments, errors: errors)
        defer { process.end() }
        let status = process.wait(timeout: 120)
        guard status == 0 else {
            let text = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw SpawnError(
                "\(arguments.joined(separator: " ")) exited \(String(describing: status)): \(text.suffix(600))")
        }
    }
}

/// Where RBSP bit `bits` (a byte boundary) lies in the stored bytes of `nal`: counted independently of
/// the parser, one byte at a time, emulation prevention bytes skipped.
func storedLength(ofRBSPBits bits: Int, in nal: [UInt8]) -> Int {
    var rbspBytes = 0
    var zeros = 0
    var index = 0
    while rbspBytes < bits / 8 && index < nal.count {
        if zeros >= 2 && nal[index] == 3 {
            zeros = 0
            index += 1
            continue
        }
        zeros = nal[index] == 0 ? zeros + 1 : 0
        rbspBytes += 1
        index += 1
    }
    return index
}

/// The slice segment headers of `nalUnits`, parsed in order with the parameter sets before them.
func parseSliceHeaders(_ nalUnits: [[UInt8]]) throws -> [HEVCSliceSegmentHeader] {
    var sets = HEVCParameterSets()
    var headers: [HEVCSliceSegmentHeader] = []
    var independent: HEVCSliceSegmentHeader?
    for (index, nal) in nalUnits.enumerated() {
        let structure = "NAL \(index)"
        let header = try HEVCNALHeader(nal, structure: structure)
        if header.isVCL {
            let slice = try HEVCSliceSegmentHeader(nal, sets: sets, previous: independent, structure: structure)
            if !slice.dependent { independent = slice }
            headers.append(slice)
        } else {
            try sets.add(nal, structure: structure)
        }
    }
    return headers
}

/// The differences between parsed lengths and the oracle's, one line each; empty when they agree.
func mismatches(_ parsed: [Int], _ oracle: [Int]) -> [String] {
    guard parsed.count == oracle.count else { return ["\(parsed.count) slices parsed, \(oracle.count) traced"] }
    return zip(parsed, oracle).enumerated().compactMap { index, pair in
        pair.0 == pair.1 ? nil : "slice \(index): parsed \(pair.0) bits, FFmpeg \(pair.1)"
    }
}

private let encodings: [(String, [String])] = [
    ("wpp-bframes-weighted", ["-x265-params", "log-level=error:wpp=1:bframes=4:b-pyramid=1:weightp=1:weightb=1"]),
    ("slices-refs-open-gop", ["-x265-params", "log-level=error:slices=4:bframes=3:ref=4:keyint=10:open-gop=1"]),
    ("no-wpp-ctu16-10bit", ["-pix_fmt", "yuv420p10le", "-x265-params", "log-level=error:wpp=0:ctu=16:bframes=2"]),
    (
        "444-hrd-temporal-layers",
        [
            "-pix_fmt", "yuv444p", "-x265-params",
            "log-level=error:ctu=32:hrd=1:vbv-bufsize=1000:vbv-maxrate=1000:temporal-layers=1",
        ]
    ),
    ("422-10bit-no-sao", ["-pix_fmt", "yuv422p10le", "-x265-params", "log-level=error:sao=0:deblock=-2,-2:slices=2"]),
    ("monochrome-lossless-cus", ["-pix_fmt", "gray", "-x265-params", "log-level=error:cu-lossless=1:rect=1:amp=1"]),
    ("intra-only", ["-x265-params", "log-level=error:keyint=1:scaling-list=default"]),
]

@Suite(.serialized, .timeLimit(.minutes(30))) struct HEVCSliceHeaderTests {
    @Test(arguments: encodings)
    func everySliceHeaderEndsWhereFFmpegSaysSliceDataBegins(name: String, arguments: [String]) throws {
        let clip = try EncodedClip(name, arguments)
        let headers = try parseSliceHeaders(clip.nalUnits)
        #expect(headers.count >= 20, "\(name): \(headers.count) slices")
        #expect(mismatches(headers.map(\.rbspBits), clip.oracleBits) == [])
        let vcl = clip.nalUnits.filter { ($0[0] >> 1) & 0x3F < 32 }
        let stored = zip(vcl, clip.oracleBits).map { storedLength(ofRBSPBits: $0.1, in: $0.0) }
        #expect(headers.map(\.storedBytes) == stored)
        // In place, the first parse reads a copy of the first bytes only. Cut anywhere, from inside the
        // NAL header to past the longest header, the answer is the same.
        for firstTry in [2, 3, 7, 16, 33, 64, HEVCClearLength.firstTry] {
            var state = HEVCClearLength()
            var clear: [Int] = []
            for (index, nal) in clip.nalUnits.enumerated() {
                let bytes = try nal.withBytes { raw throws(FormatError) in
                    try state.clearBytes(of: raw, firstTry: firstTry, structure: "NAL \(index)")
                }
                if (nal[0] >> 1) & 0x3F < 32 {
                    clear.append(bytes)
                } else {
                    #expect(bytes == nal.count, "\(name): NAL \(index) is not all clear")
                }
            }
            #expect(clear == stored, "\(name): first try of \(firstTry) bytes")
        }
        // The negative control: the same comparison catches a header one bit or one byte off.
        #expect(mismatches(headers.map { $0.rbspBits + 1 }, clip.oracleBits).count == headers.count)
        #expect(
            mismatches(Array(headers.map(\.rbspBits).dropLast()) + [headers.last!.rbspBits - 8], clip.oracleBits).count
                == 1)
    }

    @Test func truncatedOrCorruptedHeadersThrowAFormatErrorAndNeverTrap() throws {
        let clip = try EncodedClip("corrupt", ["-x265-params", "log-level=error:bframes=2:slices=2"])
        let headers = try parseSliceHeaders(clip.nalUnits)
        var sets = HEVCParameterSets()
        var checked = 0
        var vclIndex = 0
        for (index, nal) in clip.nalUnits.enumerated() {
            guard (nal[0] >> 1) & 0x3F < 32 else {
                try sets.add(nal, structure: "NAL \(index)")
                continue
            }
            let header = headers[vclIndex]
            vclIndex += 1
            if header.dependent { continue }
            // Cut inside the header: every prefix shorter than it is refused with the NAL's position.
            for length in [2, header.storedBytes - 1, header.storedBytes] where length >= 2 {
                #expect(throws: FormatError.self) {
                    _ = try HEVCSliceSegmentHeader(Array(nal.prefix(length)), sets: sets, structure: "NAL \(index)")
                }
                do {
                    _ = try HEVCSliceSegmentHeader(Array(nal.prefix(length)), sets: sets, structure: "NAL \(index)")
                } catch { #expect(error.structure == "NAL \(index)" && error.kind == .malformed) }
                checked += 1
            }
            // Every single-bit flip in the header either parses or throws; none traps.
            for bit in 16..<(header.storedBytes * 8) {
                var flipped = nal
                flipped[bit / 8] ^= 0x80 >> UInt8(bit % 8)
                _ = try? HEVCSliceSegmentHeader(flipped, sets: sets, structure: "NAL \(index)")
            }
        }
        #expect(checked > 40)
        // A slice naming a PPS that was never sent.
        let first = clip.nalUnits.first { ($0[0] >> 1) & 0x3F < 32 }!
        #expect(throws: FormatError.self) {
            _ = try HEVCSliceSegmentHeader(first, sets: HEVCParameterSets(), structure: "s")
        }
    }

    @Test func refusesInterlacedAndMultiLayerStreamsAsUnsupported() throws {
        let interlaced = try EncodedClip("interlaced", ["-x265-params", "log-level=error:interlace=tff"])
        let sps = interlaced.nalUnits.first { ($0[0] >> 1) & 0x3F == HEVCNALHeader.sps }!
        #expect(
            throws: FormatError(
                "NAL 1", "field_seq_flag is set: field-coded (interlaced) HEVC is not packaged", kind: .unsupported)
        ) {
            _ = try HEVCSequenceParameterSet(sps, structure: "NAL 1")
        }
        let clip = try EncodedClip("layered", ["-x265-params", "log-level=error"])
        var sets = HEVCParameterSets()
        for nal in clip.nalUnits where (nal[0] >> 1) & 0x3F >= 32 { try sets.add(nal, structure: "set") }
        var slice = clip.nalUnits.first { ($0[0] >> 1) & 0x3F < 32 }!
        slice[1] |= 1 << 3  // nuh_layer_id 1
        #expect(
            throws: FormatError(
                "NAL 7 at byte 90", "nuh_layer_id 1 (MV-HEVC or SHVC): only the base layer is packaged",
                kind: .unsupported)
        ) {
            _ = try HEVCSliceSegmentHeader(slice, sets: sets, structure: "NAL 7 at byte 90")
        }
        var vps = clip.nalUnits.first { ($0[0] >> 1) & 0x3F == HEVCNALHeader.vps }!
        vps[3] |= 0x10  // vps_max_layers_minus1 1
        #expect(throws: FormatError.self) { _ = try HEVCVideoParameterSet(vps) }
        do { _ = try HEVCVideoParameterSet(vps) } catch { #expect(error.kind == .unsupported) }
    }
}

@Suite struct HEVCDecoderConfigurationTests {
    @Test func writesAndReadsBackHvcCAndBuildsTheCodecString() throws {
        let clip = try EncodedClip("hvcc", ["-pix_fmt", "yuv420p10le", "-x265-params", "log-level=error"])
        func first(_ type: UInt8) -> [UInt8] { clip.nalUnits.first { ($0[0] >> 1) & 0x3F == type }! }
        let record = try HEVCDecoderConfiguration(
            vps: first(HEVCNALHeader.vps), sps: first(HEVCNALHeader.sps), pps: first(HEVCNALHeader.pps))
        let bytes = try record.serialized()
        #expect(try HEVCDecoderConfiguration(parsing: bytes) == record)
        #expect(record.bitDepthLuma == 10 && record.chromaFormat == 1 && record.lengthSize == 4)
        #expect(record.parallelismType == 3)  // x265 turns wavefronts on by default
        #expect(record.profileTierLevel.profileIDC == 2)  // Main 10
        #expect(record.codecString.hasPrefix("hvc1.2.4.L"))
        #expect(bytes[22] == 3 && bytes[23] == 0x80 | HEVCNALHeader.vps)
        // Truncated at every length, the record is refused, never trapped on.
        for length in 0..<bytes.count {
            #expect(throws: FormatError.self) { _ = try HEVCDecoderConfiguration(parsing: Array(bytes.prefix(length))) }
        }
    }

    @Test(arguments: [
        // Main, Main tier level 3.1, progressive and frame-only: ISO/IEC 14496-15's own example shape.
        (UInt8(0), false, UInt8(1), UInt32(0x6000_0000), [UInt8(0xB0), 0, 0, 0, 0, 0], UInt8(93), "hvc1.1.6.L93.B0"),
        (0, true, 2, 0x2000_0000, [0xB0, 0, 0, 0, 0, 0], 120, "hvc1.2.4.H120.B0"),
        (1, false, 4, 0x0800_0000, [0x90, 0x12, 0, 0, 0, 0x01], 153, "hvc1.A4.10.L153.90.12.0.0.0.1"),
    ])
    func buildsRFC6381CodecStrings(
        space: UInt8, high: Bool, profile: UInt8, compatibility: UInt32, constraints: [UInt8], level: UInt8,
        expected: String
    ) throws {
        var bytes: [UInt8] = [1, space << 6 | (high ? 0x20 : 0) | profile]
        bytes.appendBigEndian(compatibility)
        bytes += constraints + [level, 0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F, 0]
        #expect(try HEVCDecoderConfiguration(parsing: bytes).codecString == expected)
    }
}
