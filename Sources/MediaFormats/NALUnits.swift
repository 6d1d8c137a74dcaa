/// H.264 NAL unit types the packager treats specially (ITU-T H.264 Table 7-1).
public enum NALUnitType: Sendable {
    /// A slice of a non-IDR picture; SAMPLE-AES encrypts it.
    public static let nonIDRSlice: UInt8 = 1
    /// A slice of an IDR picture; SAMPLE-AES encrypts it, and segments start with one.
    public static let idrSlice: UInt8 = 5
    /// Supplemental enhancement information.
    public static let sei: UInt8 = 6
    /// Sequence parameter set.
    public static let sequenceParameterSet: UInt8 = 7
    /// Picture parameter set.
    public static let pictureParameterSet: UInt8 = 8
    /// Access unit delimiter.
    public static let accessUnitDelimiter: UInt8 = 9

    /// The type in a NAL unit's first byte.
    public static func of(_ header: UInt8) -> UInt8 { header & 0x1F }
}

/// Start-code emulation prevention (H.264 §7.4.1): a 0x03 byte after every 00 00 that would otherwise
/// be followed by a byte ≤ 3.
///
/// SAMPLE-AES applies it a second time after encrypting a NAL unit, because ciphertext can form
/// start codes and the decryptor strips exactly one layer.
public enum EmulationPrevention: Sendable {
    /// Appends `source` to `output`, inserting an emulation prevention byte wherever one is needed.
    public static func escape(_ source: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) {
        let count = source.count
        guard count > 0, let base = source.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var spanStart = 0
        var index = 0
        while let found = findZeroPair(base, from: index, count: count, followedBy: 0...3) {
            output.appendBytes(UnsafeRawBufferPointer(start: base + spanStart, count: found + 2 - spanStart))
            output.append(3)
            spanStart = found + 2
            index = found + 2
        }
        output.appendBytes(UnsafeRawBufferPointer(start: base + spanStart, count: count - spanStart))
    }

    /// Appends `source` to `output` with one layer of emulation prevention removed: the 0x03 of every
    /// 00 00 03 is dropped.
    public static func unescape(_ source: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) {
        let count = source.count
        guard count > 0, let base = source.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var spanStart = 0
        var index = 0
        while let found = findZeroPair(base, from: index, count: count, followedBy: 3...3) {
            output.appendBytes(UnsafeRawBufferPointer(start: base + spanStart, count: found + 2 - spanStart))
            spanStart = found + 3
            index = found + 3
        }
        if spanStart < count {
            output.appendBytes(UnsafeRawBufferPointer(start: base + spanStart, count: count - spanStart))
        }
    }

    /// The first index at or after `start` where 00 00 is followed by a byte in `third`, or nil.
    ///
    /// Every pattern starts with a pair of zero bytes, and those are rare in compressed data, so the
    /// scan reads eight bytes at a time and moves on by seven while no two adjacent bytes can both be
    /// zero (a SWAR zero-byte mask ANDed with itself shifted by one byte; a false alarm only costs a
    /// closer look).
    @inline(__always)
    public static func findZeroPair(
        _ base: UnsafePointer<UInt8>, from start: Int, count: Int, followedBy third: ClosedRange<UInt8>
    ) -> Int? {
        let raw = UnsafeRawPointer(base)
        var index = start
        while index + 2 < count {
            if index + 8 <= count {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let zeros = (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
                if zeros & (zeros >> 8) == 0 {
                    index += 7
                    continue
                }
            }
            if base[index] == 0 && base[index + 1] == 0 && third.contains(base[index + 2]) { return index }
            index += 1
        }
        return nil
    }

    /// `bytes` with emulation prevention applied.
    public static func escaped(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + bytes.count / 64 + 4)
        bytes.withUnsafeBytes { escape($0, appendingTo: &output) }
        return output
    }

    /// `bytes` with one layer of emulation prevention removed.
    public static func unescaped(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        bytes.withUnsafeBytes { unescape($0, appendingTo: &output) }
        return output
    }
}

/// Splits H.264 byte streams into NAL unit payloads.
public enum NALUnitSplitter: Sendable {
    /// The payload ranges of the length-prefixed NAL units in `sample` (MP4/avcC framing, where each
    /// unit follows a big-endian length of `lengthSize` bytes).
    public static func lengthPrefixed(_ sample: UnsafeRawBufferPointer, lengthSize: Int) throws(FormatError) -> [Range<
        Int
    >] {
        var ranges: [Range<Int>] = []
        var offset = 0
        while offset < sample.count {
            guard sample.count - offset >= lengthSize else {
                throw FormatError(
                    "H.264 sample", "\(sample.count - offset) trailing bytes are too few for a NAL length")
            }
            var length = 0
            for index in 0..<lengthSize { length = length << 8 | Int(sample[offset + index]) }
            offset += lengthSize
            guard length <= sample.count - offset else {
                throw FormatError(
                    "H.264 sample", "NAL unit of \(length) bytes overruns the sample (\(sample.count - offset) left)")
            }
            if length > 0 { ranges.append(offset..<(offset + length)) }
            offset += length
        }
        return ranges
    }

    /// The payload ranges of the NAL units in Annex-B `stream` (each after a 00 00 01 start code), with
    /// trailing zero bytes, which belong to the next start code, left out.
    public static func annexB(_ stream: UnsafeRawBufferPointer) -> [Range<Int>] {
        let count = stream.count
        guard count >= 3, let base = stream.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return [] }
        var ranges: [Range<Int>] = []
        var payloadStart: Int? = nil
        var index = 0
        while let found = EmulationPrevention.findZeroPair(base, from: index, count: count, followedBy: 1...1) {
            if let start = payloadStart { appendTrimmed(start..<found, base, &ranges) }
            payloadStart = found + 3
            index = found + 3
        }
        if let start = payloadStart { appendTrimmed(start..<count, base, &ranges) }
        return ranges
    }

    private static func appendTrimmed(_ range: Range<Int>, _ base: UnsafePointer<UInt8>, _ ranges: inout [Range<Int>]) {
        var end = range.upperBound
        while end > range.lowerBound && base[end - 1] == 0 { end -= 1 }
        if end > range.lowerBound { ranges.append(range.lowerBound..<end) }
    }

    /// True when `bytes` begin with an Annex-B start code (00 00 01 or 00 00 00 01).
    public static func startsWithStartCode(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if bytes.count >= 3 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 1 { return true }
        return bytes.count >= 4 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0 && bytes[3] == 1
    }
}
