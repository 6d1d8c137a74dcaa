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
    @inline(__always)
    public mutating func read(_ count: Int) throws(FormatError) -> UInt32 {
        precondition(count >= 0 && count <= 32, "EscapedBitReader reads at most 32 bits at a time")
        if count > 0 && count <= 8 - bit {  // within the current byte, as most fields are
            let value = (try currentByte() &>> UInt8(8 - bit - count)) & UInt8(truncatingIfNeeded: (1 << count) - 1)
            advance(within: count)
            return UInt32(value)
        }
        var value: UInt64 = 0
        var left = count
        while left > 0 {
            let byte = try currentByte()
            let available = 8 - bit
            let take = min(available, left)
            value = value << take | UInt64(byte >> (available - take)) & ((1 << take) - 1)
            advance(within: take)
            left -= take
        }
        return UInt32(value)
    }

    /// Reads one bit as a flag.
    @inline(__always)
    public mutating func flag() throws(FormatError) -> Bool {
        let set = (try currentByte() &>> UInt8(7 - bit)) & 1 == 1
        advance(within: 1)
        return set
    }

    /// Skips `count` bits: the rest of the current byte, whole bytes, then the bits left.
    public mutating func skip(_ count: Int) throws(FormatError) {
        var left = count
        if left > 0 && bit != 0 {
            _ = try currentByte()
            let take = min(8 - bit, left)
            advance(within: take)
            left -= take
        }
        if left >= 8 {
            try skipWholeBytes(left / 8)
            left %= 8
        }
        if left > 0 {
            _ = try currentByte()
            advance(within: left)
        }
    }

    /// Skips `count` whole bytes of RBSP from a byte boundary, tracking only the zero run (for the
    /// emulation prevention bytes among them); eight bytes at a time where none of them is zero.
    private mutating func skipWholeBytes(_ count: Int) throws(FormatError) {
        let bytes = self.bytes
        var next = index
        var run = zeros
        var end = next
        var left = count
        while left > 0 {
            let fast = left >= 8 ? Self.zeroFreeBytes(bytes, from: next, atMost: left) : 0
            if fast > 0 {
                next += fast
                left -= fast
                run = 0
                end = next
                continue
            }
            guard next < bytes.count else {
                throw FormatError(structure, "ends after \(bytes.count) bytes, in the middle of a field")
            }
            run = bytes[next] == 0 ? run + 1 : 0
            next += 1
            end = next
            left -= 1
            if run >= 2, next < bytes.count, bytes[next] == 3 {
                next += 1
                run = 0
            }
        }
        index = next
        zeros = run
        consumedEnd = end
        rbspBitsRead += 8 * count
    }

    /// How many of the `limit` bytes from `start` of `bytes`, in whole words of eight, hold no zero
    /// byte: no emulation prevention byte lies among or right after them.
    private static func zeroFreeBytes(_ bytes: [UInt8], from start: Int, atMost limit: Int) -> Int {
        bytes.withUnsafeBytes { raw in
            var offset = start
            while offset - start + 8 <= limit && offset + 8 <= raw.count {
                let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                // Nonzero exactly when some byte of the word is zero.
                guard (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 == 0 else { break }
                offset += 8
            }
            return offset - start
        }
    }

    /// Reads an unsigned Exp-Golomb code, `ue(v)`, of at most 32 bits of value.
    public mutating func unsignedExpGolomb() throws(FormatError) -> UInt32 {
        // The leading zero bits a byte at a time, then the one bit that ends them.
        var zeros = 0
        while true {
            let available = 8 - bit
            let run = min(Int((try currentByte() &<< UInt8(bit)).leadingZeroBitCount), available)
            guard zeros + run < 32 else { throw FormatError(structure, "an Exp-Golomb code longer than 32 bits") }
            zeros += run
            if run < available {
                advance(within: run + 1)
                break
            }
            advance(within: run)
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

    /// The stored byte holding the next bit; throws at the end of the bytes.
    @inline(__always)
    private func currentByte() throws(FormatError) -> UInt8 {
        guard index < bytes.count else {
            throw FormatError(structure, "ends after \(bytes.count) bytes, in the middle of a field")
        }
        return bytes[index]
    }

    /// Moves past `count` (1…8 − `bit`) bits of the current byte; past its end, to the next stored byte,
    /// skipping an emulation prevention byte after two zero bytes.
    @inline(__always)
    private mutating func advance(within count: Int) {
        consumedEnd = index + 1
        rbspBitsRead += count
        bit += count
        guard bit == 8 else { return }
        zeros = bytes[index] == 0 ? zeros + 1 : 0
        index += 1
        bit = 0
        if zeros >= 2, index < bytes.count, bytes[index] == 3 {
            index += 1
            zeros = 0
        }
    }
}
