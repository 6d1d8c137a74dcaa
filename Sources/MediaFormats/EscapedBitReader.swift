/// Reads the RBSP bits of a NAL unit straight from its stored (escaped) bytes, skipping each emulation
/// prevention byte (a 0x03 after two zero bytes) as it passes, and knows where in the stored bytes it is.
/// This is what a clear range needs: a header's length parsed in RBSP bits but counted in stored bytes.
///
/// Reading past the end is a `FormatError`, never a trap.
public struct EscapedBitReader {
    private let bytes: [UInt8]
    private let structure: String
    /// The stored byte holding the next bit.
    private var index: Int
    /// The next bit within that byte, 0 the most significant.
    private var bit = 0
    /// Zero bytes in a row just before `index`, for spotting emulation prevention bytes.
    private var zeros = 0
    /// RBSP bits read so far, from where the reader started.
    public private(set) var rbspBitsRead = 0
    /// One past the last stored byte a bit was read from.
    private var consumedEnd: Int

    /// Reads `bytes` from offset `start`, naming `structure` in errors.
    public init(_ bytes: [UInt8], from start: Int = 0, structure: String) {
        self.bytes = bytes
        self.structure = structure
        self.index = start
        self.consumedEnd = start
    }

    /// True when the next bit starts a byte.
    public var isByteAligned: Bool { bit == 0 }

    /// One past the last stored byte the reader has read a bit of: where a header that ends here ends
    /// in the stored bytes, rounded up to a byte, an emulation prevention byte after it not included.
    public var storedEnd: Int { consumedEnd }

    /// Reads `count` (0…32) bits as an unsigned value.
    public mutating func read(_ count: Int) throws(FormatError) -> UInt32 {
        precondition(count >= 0 && count <= 32, "EscapedBitReader reads at most 32 bits at a time")
        var value: UInt32 = 0
        for _ in 0..<count {
            guard index < bytes.count else {
                throw FormatError(structure, "ends after \(bytes.count) bytes, in the middle of a field")
            }
            value = value << 1 | UInt32((bytes[index] >> (7 - bit)) & 1)
            consumedEnd = index + 1
            rbspBitsRead += 1
            bit += 1
            if bit == 8 {
                zeros = bytes[index] == 0 ? zeros + 1 : 0
                index += 1
                bit = 0
                skipEmulationPrevention()
            }
        }
        return value
    }

    /// Reads one bit as a flag.
    public mutating func flag() throws(FormatError) -> Bool { try read(1) == 1 }

    /// Skips `count` bits.
    public mutating func skip(_ count: Int) throws(FormatError) {
        var left = count
        while left > 0 {
            let step = min(left, 32)
            _ = try read(step)
            left -= step
        }
    }

    /// Reads an unsigned Exp-Golomb code, `ue(v)`, of at most 32 bits of value.
    public mutating func unsignedExpGolomb() throws(FormatError) -> UInt32 {
        var zeros = 0
        while try read(1) == 0 {
            zeros += 1
            guard zeros < 32 else { throw FormatError(structure, "an Exp-Golomb code longer than 32 bits") }
        }
        let suffix = UInt64(try read(zeros))
        let value = (UInt64(1) << zeros) - 1 + suffix
        guard value <= UInt64(UInt32.max) else { throw FormatError(structure, "an Exp-Golomb code beyond 2^32-1") }
        return UInt32(value)
    }

    /// Reads a signed Exp-Golomb code, `se(v)`.
    public mutating func signedExpGolomb() throws(FormatError) -> Int32 {
        let code = UInt64(try unsignedExpGolomb())
        let magnitude = Int64((code + 1) / 2)
        return Int32(truncatingIfNeeded: code & 1 == 1 ? magnitude : -magnitude)
    }

    /// Reads `ue(v)` and refuses a value above `limit`, naming `field`.
    public mutating func unsignedExpGolomb(_ field: String, max limit: UInt32) throws(FormatError) -> Int {
        let value = try unsignedExpGolomb()
        guard value <= limit else { throw FormatError(structure, "\(field) is \(value), at most \(limit) allowed") }
        return Int(value)
    }

    private mutating func skipEmulationPrevention() {
        if zeros >= 2, index < bytes.count, bytes[index] == 3 {
            index += 1
            zeros = 0
        }
    }
}
