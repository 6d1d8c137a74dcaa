/// Reads big-endian bit fields, as codec headers (SPS, ADTS, AC-3 bsi, AudioSpecificConfig) lay them
/// out. Reading past the end is a `FormatError`, never a trap.
public struct BitReader: Sendable {
    private let bytes: [UInt8]
    private let structure: String
    /// The next bit to read, counted from the first byte's most significant bit.
    public private(set) var position = 0

    /// Reads `bytes`, naming `structure` in errors.
    public init(_ bytes: [UInt8], structure: String) {
        self.bytes = bytes
        self.structure = structure
    }

    /// Bits left to read.
    public var remaining: Int { bytes.count * 8 - position }

    /// Reads `count` (0…32) bits as an unsigned value.
    public mutating func read(_ count: Int) throws(FormatError) -> UInt32 {
        precondition(count >= 0 && count <= 32, "BitReader reads at most 32 bits at a time")
        guard count <= remaining else {
            throw FormatError(structure, "ends after \(bytes.count) bytes, in the middle of a field")
        }
        var value: UInt32 = 0
        for _ in 0..<count {
            let bit = (bytes[position >> 3] >> (7 - UInt8(position & 7))) & 1
            value = value << 1 | UInt32(bit)
            position += 1
        }
        return value
    }

    /// Reads one bit as a flag.
    public mutating func flag() throws(FormatError) -> Bool { try read(1) == 1 }

    /// Skips `count` bits.
    public mutating func skip(_ count: Int) throws(FormatError) {
        guard count <= remaining else {
            throw FormatError(structure, "ends after \(bytes.count) bytes, in the middle of a field")
        }
        position += count
    }

    /// Reads an unsigned Exp-Golomb code, `ue(v)` in H.264.
    public mutating func unsignedExpGolomb() throws(FormatError) -> UInt32 {
        var zeros = 0
        while try read(1) == 0 {
            zeros += 1
            guard zeros < 32 else { throw FormatError(structure, "Exp-Golomb code longer than 32 bits") }
        }
        return (UInt32(1) << zeros) - 1 + (try read(zeros))
    }

    /// Reads a signed Exp-Golomb code, `se(v)` in H.264.
    public mutating func signedExpGolomb() throws(FormatError) -> Int32 {
        let code = try unsignedExpGolomb()
        let magnitude = Int32(truncatingIfNeeded: (code + 1) / 2)
        return code & 1 == 1 ? magnitude : -magnitude
    }
}

/// Writes big-endian bit fields into bytes, for headers such as ADTS and dec3, and the Exp-Golomb codes
/// of H.264/H.265 syntax that `BitReader` reads.
public struct BitWriter: Sendable {
    /// The bytes written so far; a partial last byte is padded with zero bits.
    public private(set) var bytes: [UInt8] = []
    /// Bits written so far.
    public private(set) var bitCount = 0

    public init() {}

    /// Makes room for `count` bytes in all, so a writer that knows its length grows its bytes once.
    public mutating func reserveCapacity(_ count: Int) { bytes.reserveCapacity(count) }

    /// Appends the low `count` bits of `value`, most significant first (zero bits for a `count` over 32),
    /// filling the last byte's free bits, then whole bytes, at a time.
    public mutating func write(_ value: UInt32, bits count: Int) {
        var remaining = count
        while remaining > 0 {
            let used = bitCount & 7
            if used == 0 { bytes.append(0) }
            let take = min(8 - used, remaining)
            // The next `take` bits of the field; a shift of 32 or more gives zero bits.
            let chunk = (value >> UInt32(remaining - take)) & (UInt32(1) << UInt32(take) - 1)
            bytes[bytes.count - 1] |= UInt8(chunk) << UInt8(8 - used - take)
            bitCount += take
            remaining -= take
        }
    }

    /// Appends `value` as `ue(v)`: as many zero bits as `value + 1` has bits after its first, then
    /// `value + 1` (H.264 §9.1).
    public mutating func writeUnsignedExpGolomb(_ value: Int) {
        let code = value + 1
        let length = Int.bitWidth - code.leadingZeroBitCount
        write(0, bits: length - 1)
        write(UInt32(truncatingIfNeeded: code), bits: length)
    }

    /// Appends `value` as `se(v)`: positive values to odd codes, the rest to even ones (H.264 §9.1.1).
    public mutating func writeSignedExpGolomb(_ value: Int) {
        writeUnsignedExpGolomb(value > 0 ? 2 * value - 1 : -2 * value)
    }
}

extension Array where Element == UInt8 {
    /// Appends `value` as two big-endian bytes.
    public mutating func appendBigEndian(_ value: UInt16) {
        append(UInt8(value >> 8))
        append(UInt8(value & 0xFF))
    }

    /// Appends `value` as four big-endian bytes.
    public mutating func appendBigEndian(_ value: UInt32) {
        append(UInt8(value >> 24))
        append(UInt8((value >> 16) & 0xFF))
        append(UInt8((value >> 8) & 0xFF))
        append(UInt8(value & 0xFF))
    }

    /// Appends the ASCII bytes of a four-character code such as `zavc`.
    public mutating func appendFourCC(_ code: String) {
        precondition(code.utf8.count == 4, "a four-character code has four characters")
        append(contentsOf: code.utf8)
    }

    /// The big-endian value of the two bytes at `offset`.
    public func bigEndianUInt16(at offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }

    /// The big-endian value of the four bytes at `offset`.
    public func bigEndianUInt32(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8
            | UInt32(self[offset + 3])
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for a closure with a typed error, which `rethrows` does not carry.
    public func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { raw in Result { () throws(E) in try body(raw) } }
        return try result.get()
    }

    /// `withUnsafeMutableBytes` for a closure with a typed error, which `rethrows` does not carry.
    public mutating func withMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E)
        -> R
    {
        let result: Result<R, E> = withUnsafeMutableBytes { raw in Result { () throws(E) in try body(raw) } }
        return try result.get()
    }
}

extension Array where Element == UInt8 {
    /// Appends raw bytes with one copy; `append(contentsOf:)` walks a raw buffer byte by byte.
    public mutating func appendBytes(_ raw: UnsafeRawBufferPointer) {
        guard raw.count > 0 else { return }
        append(contentsOf: raw.assumingMemoryBound(to: UInt8.self))
    }
}
