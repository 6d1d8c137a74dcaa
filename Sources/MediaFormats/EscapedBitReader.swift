/// Reads the RBSP bits of a NAL unit straight from its stored (escaped) bytes, skipping each emulation
/// prevention byte (a 0x03 after two zero bytes) as it passes, and knows where in the stored bytes it is.
/// This is what a clear range needs: a header's length parsed in RBSP bits but counted in stored bytes.
///
/// The RBSP bits ahead are held in a 64-bit cache, filled a stored byte at a time (up to eight at once
/// where none of the next eight is 0x03), so a field or an Exp-Golomb code is a shift and a count of
/// leading zeros.
/// Which of the last stored bytes were emulation prevention bytes is kept as a bit mask, so `storedEnd`
/// can tell where the bits already read end although the cache has read ahead.
///
/// Reading past the end is a `FormatError`, never a trap.
public struct EscapedBitReader {
    private let bytes: [UInt8]
    private let structure: String
    /// Where the reader started in the stored bytes.
    private let start: Int
    /// The stored byte the cache takes next.
    private var next: Int
    /// Zero bytes in a row just before `next`, for spotting emulation prevention bytes.
    private var zeros = 0
    /// The RBSP bits ahead, most significant first; the bits below them are zero.
    private var cache: UInt64 = 0
    /// How many bits of `cache` are RBSP bits not yet read.
    private var cached = 0
    /// Bit `i` is set when the stored byte `next - 1 - i` was an emulation prevention byte.
    private var preventionBytes: UInt64 = 0
    /// RBSP bits read so far, from where the reader started.
    public private(set) var rbspBitsRead = 0

    /// Reads `bytes` from offset `start`, naming `structure` in errors.
    public init(_ bytes: [UInt8], from start: Int = 0, structure: String) {
        self.bytes = bytes
        self.structure = structure
        self.start = start
        self.next = start
    }

    /// True when the next bit starts a byte.
    public var isByteAligned: Bool { rbspBitsRead & 7 == 0 }

    /// One past the last stored byte the reader has read a bit of: where a header that ends here ends
    /// in the stored bytes, rounded up to a byte, an emulation prevention byte after it not included.
    public var storedEnd: Int {
        guard rbspBitsRead > 0 else { return start }
        guard preventionBytes != 0 else { return next - cached / 8 }
        // Back from `next` over the whole bytes the cache holds unread, and the prevention bytes
        // among and just before them.
        var end = next
        var unread = cached / 8
        while unread > 0 || isPreventionByte(end - 1) {
            if !isPreventionByte(end - 1) { unread -= 1 }
            end -= 1
        }
        return end
    }

    /// Reads `count` (0…32) bits as an unsigned value.
    @inline(__always)
    public mutating func read(_ count: Int) throws(FormatError) -> UInt32 {
        precondition(count >= 0 && count <= 32, "EscapedBitReader reads at most 32 bits at a time")
        guard count > 0 else { return 0 }
        if cached < count {
            fill()
            guard cached >= count else { throw endOfBytes() }
        }
        return UInt32(truncatingIfNeeded: take(count))
    }

    /// Reads one bit as a flag.
    @inline(__always)
    public mutating func flag() throws(FormatError) -> Bool {
        if cached == 0 {
            fill()
            guard cached > 0 else { throw endOfBytes() }
        }
        return take(1) == 1
    }

    /// Skips `count` bits: those in the cache, whole stored bytes, then the bits left.
    public mutating func skip(_ count: Int) throws(FormatError) {
        guard count > cached else {
            _ = take(count)
            return
        }
        var left = count - cached
        rbspBitsRead += cached
        cache = 0
        cached = 0
        if left >= 8 {
            try skipWholeBytes(left / 8)
            left %= 8
        }
        if left > 0 { _ = try read(left) }
    }

    /// Reads an unsigned Exp-Golomb code, `ue(v)`, of at most 32 bits of value.
    @inline(__always)
    public mutating func unsignedExpGolomb() throws(FormatError) -> UInt32 {
        if cached < 32 { fill() }
        // The cache's bits below `cached` are zero, so a run longer than the cache counts past it.
        let leading = cache.leadingZeroBitCount
        guard leading < cached else {
            throw cached >= 32 ? FormatError(structure, "an Exp-Golomb code longer than 32 bits") : endOfBytes()
        }
        guard leading < 32 else { throw FormatError(structure, "an Exp-Golomb code longer than 32 bits") }
        let length = 2 * leading + 1
        if length <= cached { return UInt32(truncatingIfNeeded: take(length) - 1) }
        _ = take(leading + 1)
        let suffix = UInt64(try read(leading))
        return UInt32(truncatingIfNeeded: (UInt64(1) << leading) - 1 + suffix)
    }

    /// Reads a signed Exp-Golomb code, `se(v)`.
    public mutating func signedExpGolomb() throws(FormatError) -> Int32 {
        let code = UInt64(try unsignedExpGolomb())
        let magnitude = Int64((code + 1) / 2)
        return Int32(truncatingIfNeeded: code & 1 == 1 ? magnitude : -magnitude)
    }

    /// Reads `ue(v)` and refuses a value above `limit`, naming `field`.
    @inline(__always)
    public mutating func unsignedExpGolomb(_ field: String, max limit: UInt32) throws(FormatError) -> Int {
        let value = try unsignedExpGolomb()
        guard value <= limit else { throw FormatError(structure, "\(field) is \(value), at most \(limit) allowed") }
        return Int(value)
    }

    /// Takes `count` (0…`cached`) bits from the top of the cache.
    @inline(__always)
    private mutating func take(_ count: Int) -> UInt64 {
        guard count > 0 else { return 0 }
        let value = cache &>> UInt64(64 - count)
        cache = count == 64 ? 0 : cache &<< UInt64(count)
        cached -= count
        rbspBitsRead += count
        return value
    }

    /// Fills the cache to at least 57 bits, or with every stored byte left: as many whole bytes as fit
    /// at once where the next eight hold no 0x03 (so no emulation prevention byte), else byte by byte.
    private mutating func fill() {
        let bytes = self.bytes
        if let word = Self.wordWithoutThree(bytes, at: next) {
            let count = (64 - cached) / 8
            let taken = word &>> UInt64(64 - 8 * count)
            cache |= taken &<< UInt64(64 - cached - 8 * count)
            cached += 8 * count
            next += count
            note(zeroRunOf: taken, bytes: count)
            return
        }
        while cached <= 56, let byte = nextRBSPByte() {
            cache |= UInt64(byte) &<< UInt64(56 - cached)
            cached += 8
        }
    }

    /// Skips `count` whole RBSP bytes with the cache empty, tracking only the zero run (for the emulation
    /// prevention bytes among them); eight bytes at a time where none of them is 0x03.
    private mutating func skipWholeBytes(_ count: Int) throws(FormatError) {
        let bytes = self.bytes
        var left = count
        while left > 0 {
            if left >= 8, let word = Self.wordWithoutThree(bytes, at: next) {
                next += 8
                left -= 8
                note(zeroRunOf: word, bytes: 8)
                continue
            }
            guard nextRBSPByte() != nil else { throw endOfBytes() }
            left -= 1
        }
        rbspBitsRead += 8 * count
    }

    /// The next RBSP byte, one stored byte on, or two past an emulation prevention byte; nil past the
    /// end. Keeps the zero run and the prevention-byte mask up to date.
    @inline(__always)
    private mutating func nextRBSPByte() -> UInt8? {
        while next < bytes.count {
            let byte = bytes[next]
            next += 1
            preventionBytes &<<= 1
            guard zeros < 2 || byte != 3 else {
                preventionBytes |= 1
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            return byte
        }
        return nil
    }

    /// Records `count` (1…8) stored bytes passed at once, none an emulation prevention byte, whose values
    /// are the low bytes of `word`: the zero run they end with, and no prevention byte among them.
    @inline(__always)
    private mutating func note(zeroRunOf word: UInt64, bytes count: Int) {
        zeros = word == 0 ? zeros + count : word.trailingZeroBitCount / 8
        preventionBytes &<<= UInt64(count)
    }

    /// The eight stored bytes from `offset` as one big-endian word when none of them is 0x03, so that no
    /// emulation prevention byte lies among them; nil otherwise or past the end.
    @inline(__always)
    private static func wordWithoutThree(_ bytes: [UInt8], at offset: Int) -> UInt64? {
        guard offset + 8 <= bytes.count else { return nil }
        let word = bytes.withUnsafeBytes {
            UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        // Nonzero exactly when some byte of the word is 0x03 (some byte of the XOR is zero).
        let threes = word ^ 0x0303_0303_0303_0303
        guard (threes &- 0x0101_0101_0101_0101) & ~threes & 0x8080_8080_8080_8080 == 0 else { return nil }
        return word
    }

    /// True when the stored byte at `index` (before `next`, within the last 64) was an emulation
    /// prevention byte the cache skipped.
    @inline(__always)
    private func isPreventionByte(_ index: Int) -> Bool {
        let distance = next - 1 - index
        return index >= start && distance < 64 && (preventionBytes &>> UInt64(distance)) & 1 == 1
    }

    /// The error of a field that runs past the stored bytes.
    private func endOfBytes() -> FormatError {
        FormatError(structure, "ends after \(bytes.count) bytes, in the middle of a field")
    }
}
