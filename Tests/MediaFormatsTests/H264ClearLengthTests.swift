import Foundation
import ProcessTestSupport
import Testing

@testable import MediaFormats

/// A short H.264 clip encoded by the ffmpeg CLI (libx264): its NAL units, and for each slice in order
/// FFmpeg's own reading of where its header ends, in RBSP bits with the NAL header. `trace_headers`
/// prints every syntax element with its bit position and its bits, so the last element of a slice
/// header, plus its length, is that end. It is the oracle the clear ranges are held to.
private func h264Clip(_ name: String, _ arguments: [String]) throws -> (nalUnits: [[UInt8]], oracleBits: [Int]) {
    let clip = try EncodedClip.encode("h264-\(name)", encoder: "libx264", format: "h264", arguments)
    // A slice header's section of the trace runs from its title line to the first line that is not a
    // syntax element.
    var ends: [Int] = []
    var inSlice = false
    for line in clip.trace.split(separator: "\n") {
        let text = line.split(separator: "] ", maxSplits: 1).last.map(String.init) ?? ""
        let fields = text.split(separator: " ")
        if inSlice, fields.count >= 4, let position = Int(fields[0]), let equals = fields.firstIndex(of: "=") {
            ends[ends.count - 1] = max(ends[ends.count - 1], position + fields[equals - 1].count)
            continue
        }
        inSlice = text == "Slice Header"
        if inSlice { ends.append(0) }
    }
    return (clip.nalUnits, ends)
}

private let encodings: [(String, [String])] = [
    ("cavlc-slices-poc2", ["-x264-params", "slices=4:cabac=0:bframes=0:keyint=8:no-deblock=1"]),
    (
        "cabac-bpyramid-weighted-refs",
        ["-x264-params", "slices=2:bframes=3:b-pyramid=normal:weightp=2:weightb=1:ref=4:keyint=12"]
    ),
    ("interlaced-mbaff", ["-x264-params", "interlaced=1:bframes=2:slices=2"]),
    ("high-8x8-scaling-lists", ["-profile:v", "high", "-x264-params", "cqm=jvt:8x8dct=1:bframes=2"]),
    ("444-lossless-open-gop", ["-pix_fmt", "yuv444p", "-qp", "0", "-x264-params", "open-gop=1:keyint=10:bframes=2"]),
]

@Suite(.serialized, .timeLimit(.minutes(30))) struct H264ClearLengthTests {
    /// Every slice keeps exactly its NAL header and slice header clear, in stored bytes rounded up to a
    /// byte, where FFmpeg's trace says the header ends; every other NAL unit is all clear.
    @Test(arguments: encodings)
    func everySliceKeepsClearExactlyTheHeaderFFmpegReads(name: String, arguments: [String]) throws {
        let clip = try h264Clip(name, arguments)
        var state = H264ClearLength()
        var clear: [Int] = []
        var slices: [[UInt8]] = []
        for (index, nal) in clip.nalUnits.enumerated() {
            let bytes = try state.clearBytes(of: nal, structure: "NAL \(index)")
            let type = nal[0] & 0x1F
            if type == 1 || type == 5 {
                clear.append(bytes)
                slices.append(nal)
            } else {
                #expect(bytes == nal.count, "\(name): NAL \(index) of type \(type) is not all clear")
            }
        }
        let expected = zip(slices, clip.oracleBits).map { storedLength(ofRBSPBits: ($0.1 + 7) / 8 * 8, in: $0.0) }
        #expect(slices.count >= 20, "\(name): \(slices.count) slices")
        #expect(clip.oracleBits.count == slices.count, "\(name): \(clip.oracleBits.count) slice headers traced")
        #expect(clear == expected)
        // The oracle is not one length for all: a parser that ignored the header's variable parts fails.
        #expect(Set(expected).count >= 3, "\(name): the traced header lengths \(Set(expected))")
    }

    /// A slice cut inside its header is refused with a `FormatError`, as is a slice whose PPS never came;
    /// data partitioning, SVC and MVC units are refused as unsupported, naming where they are.
    @Test func refusesTruncatedSlicesMissingParameterSetsAndUnsupportedUnits() throws {
        let clip = try h264Clip("refusals", ["-x264-params", "bframes=2:slices=2"])
        var state = H264ClearLength()
        var checked = 0
        for (index, nal) in clip.nalUnits.enumerated() {
            let type = nal[0] & 0x1F
            guard type == 1 || type == 5 else {
                _ = try state.clearBytes(of: nal, structure: "NAL \(index)")
                continue
            }
            var copy = state
            let header = try copy.clearBytes(of: nal, structure: "NAL \(index)")
            if header > 3 {
                #expect(throws: FormatError.self) {
                    _ = try copy.clearBytes(of: Array(nal.prefix(2)), structure: "NAL \(index)")
                }
                checked += 1
            }
        }
        #expect(checked >= 10)
        let slice = try #require(clip.nalUnits.first { $0[0] & 0x1F == 5 })
        var fresh = H264ClearLength()
        #expect(throws: FormatError.self) { _ = try fresh.clearBytes(of: slice, structure: "NAL 0") }
        for type: UInt8 in [2, 3, 4, 14, 15, 20, 21] {
            do {
                _ = try fresh.clearBytes(of: [0x60 | type, 0x88, 0x84, 0x00], structure: "NAL 7")
                Issue.record("NAL unit type \(type) was given clear bytes")
            } catch {
                #expect(error.kind == .unsupported)
                #expect(error.structure == "NAL 7")
            }
        }
    }
}
