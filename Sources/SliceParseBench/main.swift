import Foundation
import MediaFormats

// `slice-parse-bench h264|hevc FILE [LOOPS]`: times the clear-length computation of packaging, the
// slice-header parse of every VCL NAL unit of the Annex-B elementary stream FILE against its parameter
// sets, LOOPS times over (bench/slice-parse.sh compares the codecs at one bit rate). Prints one line:
// codec, VCL NAL units, stream MB, seconds, ns per NAL unit, ms per MB of stream, clear bytes.

let arguments = CommandLine.arguments
guard arguments.count >= 3, ["h264", "hevc"].contains(arguments[1]),
    let data = FileManager.default.contents(atPath: arguments[2]),
    let loops = arguments.count > 3 ? Int(arguments[3]) : 1, loops > 0
else {
    FileHandle.standardError.write(Data("usage: slice-parse-bench h264|hevc FILE [LOOPS]\n".utf8))
    exit(2)
}
let isHEVC = arguments[1] == "hevc"
let stream = [UInt8](data)
let ranges = stream.withUnsafeBytes { NALUnitSplitter.annexB($0) }

// The parameter sets are read once, untimed; the VCL NAL units are copied out once, as the packager
// holds each in its access unit.
var h264Sets = H264SliceHeader.ParameterSets()
var hevcSets = HEVCParameterSets()
var slices: [[UInt8]] = []
do {
    for range in ranges where !range.isEmpty {
        let nal = Array(stream[range])
        if isHEVC {
            guard nal.count >= 2 else { continue }
            if (nal[0] >> 1) & 0x3F < 32 { slices.append(nal) } else { try hevcSets.add(nal, structure: "NAL unit") }
        } else {
            let type = NALUnitType.of(nal[0])
            if type == NALUnitType.nonIDRSlice || type == NALUnitType.idrSlice {
                slices.append(nal)
            } else {
                try h264Sets.take(nal)
            }
        }
    }
} catch {
    FileHandle.standardError.write(Data("slice-parse-bench: \(arguments[2]): \(error)\n".utf8))
    exit(1)
}

var clear = 0
let clock = ContinuousClock()
let elapsed: Duration
do {
    elapsed = try clock.measure {
        for _ in 0..<loops {
            var previous: HEVCSliceSegmentHeader? = nil
            for nal in slices {
                if isHEVC {
                    let slice = try HEVCSliceSegmentHeader(
                        nal, sets: hevcSets, previous: previous, structure: "VCL NAL unit")
                    if !slice.dependent { previous = slice }
                    clear += slice.storedBytes
                } else {
                    clear += try nal.withUnsafeBytes {
                        try H264SliceHeader(nal: $0, parameterSets: h264Sets).storedLength
                    }
                }
            }
        }
    }
} catch {
    FileHandle.standardError.write(Data("slice-parse-bench: \(arguments[2]): \(error)\n".utf8))
    exit(1)
}
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let units = slices.count * loops
let megabytes = Double(stream.count * loops) / 1e6
let figures = String(
    format: "%.1f %.4f %.1f %.4f", megabytes, seconds, seconds * 1e9 / Double(units), seconds * 1e3 / megabytes)
print("\(arguments[1]) \(units) \(figures) \(clear)")
