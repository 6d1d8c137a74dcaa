import Foundation
import Testing

@testable import MediaFormats

/// The NAL units of `clip` grouped into access units: a new one starts at a parameter set, AUD or
/// prefix SEI after a slice, or at a slice whose `first_slice_segment_in_pic_flag` is set.
private func accessUnits(_ nalUnits: [[UInt8]]) -> [[[UInt8]]] {
    var units: [[[UInt8]]] = []
    var current: [[UInt8]] = []
    var sawSlice = false
    for nal in nalUnits {
        let type = (nal[0] >> 1) & 0x3F
        let startsPicture = type < 32 && nal[2] & 0x80 != 0
        if sawSlice && (startsPicture || (32...39).contains(type)) {
            units.append(current)
            current = []
            sawSlice = false
        }
        current.append(nal)
        if type < 32 { sawSlice = true }
    }
    if !current.isEmpty { units.append(current) }
    return units
}

/// An Annex-B access unit of `nalUnits` and the ranges of its NAL units.
private func annexB(_ nalUnits: [[UInt8]]) -> (bytes: [UInt8], ranges: [Range<Int>]) {
    var bytes: [UInt8] = []
    var ranges: [Range<Int>] = []
    for nal in nalUnits {
        bytes += [0, 0, 0, 1]
        ranges.append(bytes.count..<(bytes.count + nal.count))
        bytes += nal
    }
    return (bytes, ranges)
}

@Suite(.serialized, .timeLimit(.minutes(30))) struct HEVCSampleBuilderTests {
    /// Every slice's clear bytes are the length prefix and where FFmpeg's trace ends its header, in the
    /// stored bytes; parameter sets go to hvcC, other non-VCL units stay in the sample, all clear.
    @Test func clearBytesEndWhereFFmpegsTraceEndsEachSliceHeader() throws {
        let clip = try EncodedClip(
            "builder", ["-x265-params", "log-level=error:slices=3:bframes=3:keyint=12:wpp=1:repeat-headers=1"])
        var builder = HEVCSampleBuilder()
        var clear: [Int] = []
        var slices: [[UInt8]] = []
        var samples = 0
        for unit in accessUnits(clip.nalUnits) {
            let (bytes, ranges) = annexB(unit + [[0x46, 0x01, 0x50]])  // an AUD, dropped
            let built = try builder.sample(bytes: bytes, nalUnits: ranges)
            var offset = 0
            for (size, clearBytes) in built.units {
                let length = Int(built.bytes.bigEndianUInt32(at: offset))
                #expect(size == 4 + length)
                let nal = Array(built.bytes[(offset + 4)..<(offset + size)])
                let type = (nal[0] >> 1) & 0x3F
                #expect(!(32...35).contains(type), "parameter sets and AUDs are not in the samples")
                if type < 32 {
                    clear.append(clearBytes - 4)
                    slices.append(nal)
                } else {
                    #expect(clearBytes == size)
                }
                offset += size
            }
            #expect(offset == built.bytes.count)
            samples += 1
        }
        #expect(samples == 20 && slices.count == 60)
        let oracle = zip(slices, clip.oracleBits).map { storedLength(ofRBSPBits: $0.1, in: $0.0) }
        #expect(clip.oracleBits.count == slices.count && clear == oracle)
        // The hvcC record carries the first VPS, SPS and PPS and reads back.
        let record = try builder.configuration()
        #expect(record.nalUnits.map { ($0[0] >> 1) & 0x3F } == [32, 33, 34])
        #expect(try HEVCDecoderConfiguration(parsing: try record.serialized()) == record)
        #expect(record.codecString.hasPrefix("hvc1.1.6.L"))
    }

    @Test func refusesWhatHvc1CannotCarryAndNamesTheNAL() throws {
        let clip = try EncodedClip("builder-refusals", ["-x265-params", "log-level=error:bframes=0:keyint=5"])
        let units = accessUnits(clip.nalUnits)
        // No parameter sets before the first picture: malformed.
        var bare = HEVCSampleBuilder()
        let withoutSets = annexB(units[0].filter { ($0[0] >> 1) & 0x3F < 32 || ($0[0] >> 1) & 0x3F > 34 })
        do {
            _ = try bare.sample(bytes: withoutSets.bytes, nalUnits: withoutSets.ranges)
            Issue.record("a picture without parameter sets was packaged")
        } catch {
            #expect(error.kind == .malformed && error.reason == "names PPS 0, which was not sent")
            #expect(error.structure.hasPrefix("HEVC NAL unit 1 (type 20, at byte "), "\(error)")
        }
        // A PPS that changes later: unsupported (exit 16), since hvc1's arrays are complete.
        var builder = HEVCSampleBuilder()
        let first = annexB(units[0])
        _ = try builder.sample(bytes: first.bytes, nalUnits: first.ranges)
        var pps = units[0].first { ($0[0] >> 1) & 0x3F == 34 }!
        // The same PPS again is dropped.
        let same = annexB([pps] + units[1])
        #expect(try builder.sample(bytes: same.bytes, nalUnits: same.ranges).units.count == units[1].count)
        var changed = HEVCSampleBuilder()
        _ = try changed.sample(bytes: first.bytes, nalUnits: first.ranges)
        pps = try #require(
            EncodedClip("builder-pps", ["-x265-params", "log-level=error:wpp=0:sao=0"]).nalUnits.first {
                ($0[0] >> 1) & 0x3F == 34
            })
        let other = annexB([pps] + units[1])
        do {
            _ = try changed.sample(bytes: other.bytes, nalUnits: other.ranges)
            Issue.record("a changed PPS was packaged")
        } catch {
            #expect(error.kind == .unsupported && error.structure.hasPrefix("HEVC NAL unit 0 (type 34, at byte 4"))
        }
        // A slice whose header does not parse: malformed, named by index, type and byte offset.
        var broken = HEVCSampleBuilder()
        var second = units[1]
        let slice = second.firstIndex { ($0[0] >> 1) & 0x3F < 32 }!
        second[slice] = Array(second[slice].prefix(3))
        _ = try broken.sample(bytes: first.bytes, nalUnits: first.ranges)
        let cut = annexB(second)
        do {
            _ = try broken.sample(bytes: cut.bytes, nalUnits: cut.ranges)
            Issue.record("a cut slice header was packaged")
        } catch {
            #expect(error.kind == .malformed && error.structure.hasPrefix("HEVC NAL unit \(slice) (type "))
        }
    }

    /// A non-VCL unit longer than 65,535 bytes is clear in runs the 16-bit field can carry.
    @Test func longClearRunsAreSplit() throws {
        let clip = try EncodedClip("builder-long-sei", ["-x265-params", "log-level=error:bframes=0"])
        let unit = accessUnits(clip.nalUnits)[0]
        let sei: [UInt8] = [0x4E, 0x01] + [UInt8](repeating: 0x55, count: 70_000)
        let (bytes, ranges) = annexB(unit.prefix(3) + [sei] + unit.dropFirst(3))
        var builder = HEVCSampleBuilder()
        let built = try builder.sample(bytes: bytes, nalUnits: ranges)
        let map = SubsampleMap.make(built.units, scheme: .cbcs)
        #expect(map.allSatisfy { $0.clear <= 65_535 } && map[0] == Subsample(clear: 65_535, protected: 0))
        #expect(map.reduce(0) { $0 + $1.clear + $1.protected } == built.bytes.count)
        let slice = try #require(built.units.firstIndex { $0.clear < $0.size })
        let leading = built.units[..<slice].reduce(0) { $0 + $1.size } + built.units[slice].clear
        #expect(map[0].clear + map[1].clear == leading)
        #expect(map[1].protected == built.units[slice].size - built.units[slice].clear)
    }
}

@Suite(.timeLimit(.minutes(30))) struct HEVCAnnexBConverterTests {
    /// MP4's length-prefixed samples with hvcC become Annex-B units; an IRAP unit gains the parameter sets.
    @Test func convertsLengthPrefixedSamplesAndPutsParameterSetsBeforeIRAPPictures() throws {
        let clip = try EncodedClip("converter", ["-x265-params", "log-level=error:bframes=0:keyint=4"])
        let units = accessUnits(clip.nalUnits)
        func sets(_ unit: [[UInt8]]) -> [[UInt8]] { unit.filter { (32...34).contains(($0[0] >> 1) & 0x3F) } }
        let record = try HEVCDecoderConfiguration(
            vps: sets(units[0])[0], sps: sets(units[0])[1], pps: sets(units[0])[2])
        var converter = try HEVCAnnexBConverter(extradata: try record.serialized())
        #expect(converter.codecString == record.codecString)
        for (index, unit) in units.prefix(6).enumerated() {
            let pictures = unit.filter { ($0[0] >> 1) & 0x3F < 32 || ($0[0] >> 1) & 0x3F > 34 }
            var sample: [UInt8] = []
            for nal in pictures {
                sample.appendBigEndian(UInt32(nal.count))
                sample += nal
            }
            let converted = try #require(
                try sample.withUnsafeBytes { raw throws(FormatError) in try converter.convert(raw) })
            let nalUnits = converted.nalUnits.map { Array(converted.bytes[$0]) }
            let irap = index % 4 == 0
            #expect(converted.isRandomAccess == irap, "unit \(index)")
            let beforeSlice = Array(nalUnits.prefix { ($0[0] >> 1) & 0x3F >= 32 })
            #expect(
                Array(beforeSlice.filter { (32...34).contains(($0[0] >> 1) & 0x3F) }) == (irap ? sets(units[0]) : []))
            #expect(nalUnits.filter { !(32...34).contains(($0[0] >> 1) & 0x3F) } == pictures)
            for range in converted.nalUnits {
                #expect(Array(converted.bytes[(range.lowerBound - 4)..<range.lowerBound]) == [0, 0, 0, 1])
            }
        }
    }

    /// An hvcC whose NAL unit overruns it is malformed (exit 14), and names the unit.
    @Test func refusesAMalformedHvcC() throws {
        let clip = try EncodedClip("converter-hvcc", ["-x265-params", "log-level=error"])
        func first(_ type: UInt8) -> [UInt8] { clip.nalUnits.first { ($0[0] >> 1) & 0x3F == type }! }
        var bytes = try HEVCDecoderConfiguration(
            vps: first(HEVCNALHeader.vps), sps: first(HEVCNALHeader.sps), pps: first(HEVCNALHeader.pps)
        ).serialized()
        #expect(throws: Never.self) { _ = try HEVCAnnexBConverter(extradata: bytes) }
        bytes[26] = 0xFF  // the VPS's 16-bit length
        do {
            _ = try HEVCAnnexBConverter(extradata: bytes)
            Issue.record("a malformed hvcC was accepted")
        } catch {
            #expect(
                error.kind == .malformed && error.structure == "hvcC" && error.reason.hasPrefix("NAL unit 0 of array 0")
            )
        }
    }
}
