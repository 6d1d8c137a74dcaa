import Testing

@testable import MediaFormats

/// The reader as it was before it read whole bytes at a time: the RBSP bits one by one, with the stored
/// byte each came from, so `EscapedBitReader` can be held to it field by field.
private struct BitByBitReader {
    var rbsp: [UInt8] = []
    /// For each RBSP byte, the stored byte it came from.
    var storedIndex: [Int] = []
    var position = 0

    init(_ stored: [UInt8], from start: Int) {
        var zeros = 0
        for index in start..<stored.count {
            if zeros >= 2 && stored[index] == 3 {
                zeros = 0
                continue
            }
            zeros = stored[index] == 0 ? zeros + 1 : 0
            rbsp.append(stored[index])
            storedIndex.append(index)
        }
    }

    /// One past the stored byte of the last bit read; `start` when none was.
    func storedEnd(start: Int) -> Int { position == 0 ? start : storedIndex[(position - 1) / 8] + 1 }

    mutating func bit() -> UInt32? {
        guard position < rbsp.count * 8 else { return nil }
        defer { position += 1 }
        return UInt32((rbsp[position / 8] >> (7 - UInt8(position % 8))) & 1)
    }

    mutating func read(_ count: Int) -> UInt32? {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard let bit = bit() else { return nil }
            value = value << 1 | bit
        }
        return value
    }

    /// `ue(v)`, or nil when the bits run out or the code is longer than 32 bits.
    mutating func unsignedExpGolomb() -> UInt64? {
        var zeros = 0
        while true {
            guard let bit = bit() else { return nil }
            if bit == 1 { break }
            zeros += 1
            if zeros == 32 { return nil }
        }
        guard let suffix = read(zeros) else { return nil }
        return (UInt64(1) << zeros) - 1 + UInt64(suffix)
    }
}

/// A fixed xorshift generator, so a failure names a sequence that can be replayed.
private struct Xorshift: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}

@Suite struct EscapedBitReaderTests {
    /// Random stored bytes rich in zero runs and 0x03 bytes, read by random fields of every kind: each
    /// value, each error, `rbspBitsRead` and `storedEnd` agree with the bit-by-bit reader.
    @Test(arguments: 1...200 as ClosedRange<UInt64>)
    func readsWhatTheBitByBitReaderReads(seed: UInt64) {
        var random = Xorshift(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        let pieces: [[UInt8]] = [[0], [0, 0], [0, 0, 3], [3], [1], [0x80], [0xFF], [0x40]]
        var stored: [UInt8] = []
        for _ in 0..<Int.random(in: 1...60, using: &random) {
            stored +=
                Bool.random(using: &random)
                ? pieces.randomElement(using: &random)! : [UInt8.random(in: 0...255, using: &random)]
        }
        compareWithBitByBit(stored, seed: seed, random: &random)
    }

    /// Longer random stored bytes where 0x03 is rare, as in real slice headers, so that the reader mostly
    /// fills its cache and skips eight bytes at a time, with the odd emulation prevention byte and zero
    /// run at every offset within those words: the same agreement.
    @Test(arguments: 1...100 as ClosedRange<UInt64>)
    func readsWhatTheBitByBitReaderReadsWhereWholeWordsAreTaken(seed: UInt64) {
        var random = Xorshift(state: seed &* 0xD1B5_4A32_D192_ED03 | 1)
        var stored: [UInt8] = []
        for _ in 0..<Int.random(in: 40...400, using: &random) {
            switch Int.random(in: 0..<40, using: &random) {
            case 0: stored += [0, 0, 3]
            case 1: stored += [0, 0]
            default: stored.append(UInt8.random(in: 4...255, using: &random))
            }
        }
        compareWithBitByBit(stored, seed: seed, random: &random)
    }

    /// Reads `stored` with random fields of every kind, from a random start of 0…2, with
    /// `EscapedBitReader` and the bit-by-bit reader, and expects the same values, errors,
    /// `rbspBitsRead`, `storedEnd` and alignment after each.
    private func compareWithBitByBit(_ stored: [UInt8], seed: UInt64, random: inout Xorshift) {
        let start = Int.random(in: 0...min(2, stored.count), using: &random)
        var reader = EscapedBitReader(stored, from: start, structure: "bytes")
        var reference = BitByBitReader(stored, from: start)
        for step in 0..<60 {
            let context = "seed \(seed) step \(step) of \(stored) from \(start)"
            let expected: UInt64?
            let actual: UInt64?
            switch Int.random(in: 0..<5, using: &random) {
            case 0:
                let count = Int.random(in: 0...32, using: &random)
                expected = reference.read(count).map(UInt64.init)
                actual = (try? reader.read(count)).map(UInt64.init)
            case 1:
                expected = reference.read(1).map(UInt64.init)
                actual = (try? reader.flag()).map { $0 ? 1 : 0 }
            case 2:
                let count = Int.random(in: 0...160, using: &random)
                expected = reference.read(count).map { _ in 0 }
                actual = (try? reader.skip(count)).map { 0 }
            default:
                let code = reference.unsignedExpGolomb()
                expected = code.flatMap { $0 <= UInt64(UInt32.max) ? $0 : nil }
                actual = (try? reader.unsignedExpGolomb()).map(UInt64.init)
            }
            // The first difference ends the sequence: the later steps would only repeat it.
            #expect(actual == expected, "\(context)")
            guard let actual, actual == expected else { return }
            #expect(reader.rbspBitsRead == reference.position, "\(context)")
            #expect(reader.storedEnd == reference.storedEnd(start: start), "\(context)")
            #expect(reader.isByteAligned == (reference.position % 8 == 0), "\(context)")
            guard reader.rbspBitsRead == reference.position, reader.storedEnd == reference.storedEnd(start: start)
            else { return }
        }
    }

    /// Running out names the stored length; a code of 32 leading zero bits is refused as such.
    @Test func namesWhyItStopped() {
        var short = EscapedBitReader([0xFF, 0x00, 0x00, 0x03], structure: "PPS")
        #expect(throws: FormatError("PPS", "ends after 4 bytes, in the middle of a field")) { try short.skip(25) }
        var zeros = EscapedBitReader([0, 0, 3, 0, 0, 3, 0, 0x80], structure: "SPS")
        #expect(throws: FormatError("SPS", "an Exp-Golomb code longer than 32 bits")) {
            _ = try zeros.unsignedExpGolomb()
        }
    }
}
