/// One ISO BMFF box found in a byte array: its type and where it and its body lie.
public struct Box: Equatable {
    /// The four-character type.
    public var type: String
    /// The whole box, header included, in the bytes it was read from.
    public var range: Range<Int>
    /// The body after the header (after version and flags for a full box only once read by a `BoxReader`).
    public var body: Range<Int>

    /// A box of `type` spanning `range`, with its body at `body`.
    public init(type: String, range: Range<Int>, body: Range<Int>) {
        self.type = type
        self.range = range
        self.body = body
    }
}

/// Reads ISO BMFF boxes (ISO/IEC 14496-12 §4.2) and their big-endian fields from bytes. Every size is
/// checked against what is there: a box that runs past its parent, a field past the body, a size
/// below its header are `FormatError`s that name the box and the offset, never a trap.
public struct BoxReader {
    /// The bytes being read.
    public let bytes: [UInt8]
    /// Where the next field is read.
    public var position: Int
    /// Where the current box body ends.
    public let limit: Int
    /// The structure named in errors, such as `video-1.m4s moof/traf trun`.
    public var structure: String { boxType.map { parent + " " + $0 } ?? parent }
    /// The structure the reader was given and, for a box's body, the box's type: joined only when an
    /// error names them, since a reader is made for every box read and most read without one.
    private let parent: String
    private let boxType: String?

    /// A reader over `range` of `bytes`.
    public init(_ bytes: [UInt8], range: Range<Int>? = nil, structure: String) {
        self.init(bytes, range: range ?? 0..<bytes.count, parent: structure, boxType: nil)
    }

    /// A reader over the body of `box`; `structure` names what holds the box, and errors name the box
    /// after it (`structure trun`).
    public init(_ bytes: [UInt8], box: Box, structure: String) {
        self.init(bytes, range: box.body, parent: structure, boxType: box.type)
    }

    private init(_ bytes: [UInt8], range: Range<Int>, parent: String, boxType: String?) {
        self.bytes = bytes
        position = range.lowerBound
        limit = range.upperBound
        self.parent = parent
        self.boxType = boxType
    }

    /// Bytes left before the limit.
    public var remaining: Int { limit - position }

    /// The boxes from `position` to the limit, in order.
    public mutating func boxes() throws(FormatError) -> [Box] {
        var found: [Box] = []
        // Room for the boxes a parent usually holds (a traf's six, an stsd entry's few), in one allocation.
        found.reserveCapacity(min(remaining / 8, 8))
        while position < limit {
            guard remaining >= 8 else {
                throw FormatError(structure, "\(remaining) stray bytes at offset \(position), too few for a box header")
            }
            let start = position
            var size = Int(try u32())
            let type = try fourCC()
            var header = 8
            if size == 1 {
                let large = try u64()
                guard large <= UInt64(Int.max) else { throw FormatError(structure, "box '\(type)' size \(large)") }
                size = Int(large)
                header = 16
            } else if size == 0 {
                size = limit - start
            }
            guard size >= header, size <= limit - start else {
                throw FormatError(
                    structure,
                    "box '\(type)' at offset \(start) declares \(size) bytes but \(limit - start) remain in its parent")
            }
            found.append(Box(type: type, range: start..<(start + size), body: (start + header)..<(start + size)))
            position = start + size
        }
        return found
    }

    /// The one box of `type` among `boxes`, or an error naming it as missing or repeated.
    public static func one(_ type: String, in boxes: [Box], structure: String) throws(FormatError) -> Box {
        var found: Box? = nil
        var count = 0
        for box in boxes where box.type == type {
            found = box
            count += 1
        }
        guard count == 1, let found else {
            throw FormatError(structure, count == 0 ? "has no '\(type)' box" : "has \(count) '\(type)' boxes, not one")
        }
        return found
    }

    private mutating func take(_ count: Int) throws(FormatError) -> Int {
        guard count >= 0, count <= remaining else {
            throw FormatError(structure, "ends at offset \(limit) in the middle of a field at offset \(position)")
        }
        defer { position += count }
        return position
    }

    public mutating func u8() throws(FormatError) -> UInt8 { bytes[try take(1)] }
    public mutating func u16() throws(FormatError) -> UInt16 { bytes.bigEndianUInt16(at: try take(2)) }
    public mutating func u32() throws(FormatError) -> UInt32 { bytes.bigEndianUInt32(at: try take(4)) }
    public mutating func u64() throws(FormatError) -> UInt64 {
        let high = try u32()
        return UInt64(high) << 32 | UInt64(try u32())
    }
    public mutating func fourCC() throws(FormatError) -> String {
        let start = try take(4)
        return String(decoding: bytes[start..<(start + 4)], as: UTF8.self)
    }
    public mutating func data(_ count: Int) throws(FormatError) -> [UInt8] {
        let start = try take(count)
        return Array(bytes[start..<(start + count)])
    }
    public mutating func skip(_ count: Int) throws(FormatError) { _ = try take(count) }

    /// Reads a full box's version and flags.
    public mutating func versionAndFlags() throws(FormatError) -> (version: UInt8, flags: UInt32) {
        let word = try u32()
        return (UInt8(word >> 24), word & 0xFF_FFFF)
    }
}
