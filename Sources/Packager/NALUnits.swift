import Glibc

/// H.264 NAL unit types the packager treats specially (ITU-T H.264 Table 7-1).
enum NALUnitType {
    /// A slice of a non-IDR picture; SAMPLE-AES encrypts it.
    static let nonIDRSlice: UInt8 = 1
    /// A slice of an IDR picture; SAMPLE-AES encrypts it, and segments start with one.
    static let idrSlice: UInt8 = 5
    /// Supplemental enhancement information.
    static let sei: UInt8 = 6
    /// Sequence parameter set.
    static let sequenceParameterSet: UInt8 = 7
    /// Picture parameter set.
    static let pictureParameterSet: UInt8 = 8
    /// Access unit delimiter.
    static let accessUnitDelimiter: UInt8 = 9

    /// The type in a NAL unit's first byte.
    static func of(_ header: UInt8) -> UInt8 { header & 0x1F }
}

/// Start-code emulation prevention (H.264 §7.4.1): a 0x03 byte after every 00 00 that would otherwise
/// be followed by a byte ≤ 3.
///
/// SAMPLE-AES applies it a second time after encrypting a NAL unit, because ciphertext can form
/// start codes and the decryptor strips exactly one layer.
enum EmulationPrevention {
    /// Appends `source` to `output`, inserting an emulation prevention byte wherever one is needed.
    static func escape(_ source: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) {
        let count = source.count
        guard count > 0, let base = source.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var spanStart = 0
        var index = 0
        while index + 2 < count {
            guard let found = memchr(base + index, 0, count - index - 2) else { break }
            index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if base[index + 1] == 0 && base[index + 2] <= 3 {
                output.append(contentsOf: UnsafeRawBufferPointer(start: base + spanStart, count: index + 2 - spanStart))
                output.append(3)
                spanStart = index + 2
                index += 2
            } else {
                index += 1
            }
        }
        output.append(contentsOf: UnsafeRawBufferPointer(start: base + spanStart, count: count - spanStart))
    }

    /// Appends `source` to `output` with one layer of emulation prevention removed: the 0x03 of every
    /// 00 00 03 is dropped.
    static func unescape(_ source: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) {
        let count = source.count
        guard count > 0, let base = source.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var spanStart = 0
        var index = 0
        while index + 2 < count {
            guard let found = memchr(base + index, 0, count - index - 2) else { break }
            index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if base[index + 1] == 0 && base[index + 2] == 3 {
                output.append(contentsOf: UnsafeRawBufferPointer(start: base + spanStart, count: index + 2 - spanStart))
                spanStart = index + 3
                index += 3
            } else {
                index += 1
            }
        }
        if spanStart < count {
            output.append(contentsOf: UnsafeRawBufferPointer(start: base + spanStart, count: count - spanStart))
        }
    }

    /// `bytes` with emulation prevention applied.
    static func escaped(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        bytes.withUnsafeBytes { escape($0, appendingTo: &output) }
        return output
    }

    /// `bytes` with one layer of emulation prevention removed.
    static func unescaped(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        bytes.withUnsafeBytes { unescape($0, appendingTo: &output) }
        return output
    }
}

/// Splits H.264 byte streams into NAL unit payloads.
enum NALUnitSplitter {
    /// The payload ranges of the length-prefixed NAL units in `sample` (MP4/avcC framing, where each
    /// unit follows a big-endian length of `lengthSize` bytes).
    static func lengthPrefixed(_ sample: UnsafeRawBufferPointer, lengthSize: Int) throws(FormatError) -> [Range<Int>] {
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
    static func annexB(_ stream: UnsafeRawBufferPointer) -> [Range<Int>] {
        let count = stream.count
        guard count >= 3, let base = stream.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return [] }
        var ranges: [Range<Int>] = []
        var payloadStart: Int? = nil
        var index = 0
        while index + 2 < count {
            guard let found = memchr(base + index, 0, count - index - 2) else { break }
            index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if base[index + 1] == 0 && base[index + 2] == 1 {
                if let start = payloadStart { appendTrimmed(start..<index, base, &ranges) }
                payloadStart = index + 3
                index += 3
            } else {
                index += 1
            }
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
    static func startsWithStartCode(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if bytes.count >= 3 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 1 { return true }
        return bytes.count >= 4 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0 && bytes[3] == 1
    }
}
