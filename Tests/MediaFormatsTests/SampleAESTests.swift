import Crypto
import Testing

@testable import MediaFormats

/// A NAL unit of `length` bytes of type `type` whose clear parts hold emulation prevention sequences
/// (00 00 03 xx) that the second escaping layer must double.
private func slice(length: Int, type: UInt8 = 5, seed: UInt32 = 1) -> [UInt8] {
    var nal = Reference.bytes(length, seed: seed).map { $0 == 0 ? 1 : $0 }
    nal[0] = 0x60 | type
    for position in [4, 20, length - 6] where position + 3 < length && position > 0 {
        nal.replaceSubrange(position..<(position + 4), with: [0, 0, 3, 1])
    }
    return nal
}

private func accessUnit(_ nals: [[UInt8]]) -> H264AccessUnit {
    var unit = H264AccessUnit(bytes: [], nalUnits: [], containsIDR: true)
    for nal in nals {
        unit.bytes += [0, 0, 0, 1]
        unit.nalUnits.append(unit.bytes.count..<(unit.bytes.count + nal.count))
        unit.bytes += nal
    }
    return unit
}

private func encrypt(_ nals: [[UInt8]]) throws -> [UInt8] {
    let cipher = try SampleAESCipher(key: Reference.key, iv: Reference.iv, encrypt: true)
    var out: [UInt8] = []
    var unit = accessUnit(nals)
    try cipher.encryptVideo(&unit.bytes, nalUnits: unit.nalUnits, appendingTo: &out)
    return out
}

@Suite struct SampleAESVideoTests {
    /// Lengths at the edges of the pattern, with the blocks the specification encrypts in each.
    static let edges: [(length: Int, blocks: [Range<Int>])] = [
        (48, []),  // 32 clear + 16: the block would leave nothing after it, so nothing is encrypted
        (49, [32..<48]),
        (64, [32..<48]),
        (176, [32..<48]),  // 32 clear, one block, 128 clear: the next block would start at 192
        (177, [32..<48]),
        (208, [32..<48]),  // the block at 192 is a trailing block of exactly 16 bytes: clear
        (209, [32..<48, 192..<208]),
        (400, [32..<48, 192..<208, 352..<368]),
    ]

    @Test(arguments: edges.indices)
    func encryptsExactlyThePatternBlocks(_ index: Int) throws {
        let (length, blocks) = Self.edges[index]
        let nal = slice(length: length)
        let output = try encrypt([nal])
        #expect(Array(output[0..<4]) == [0, 0, 0, 1])
        let payload = Array(output[4...])
        #expect(payload == Reference.encryptNAL(nal))
        if blocks.isEmpty {
            // Not protected: not escaped again either, or a decryptor would strip the wrong layer.
            #expect(payload == nal)
            return
        }
        let unescaped = EmulationPrevention.unescaped(payload)
        #expect(unescaped.count == length)
        for position in 0..<length where !blocks.contains(where: { $0.contains(position) }) {
            #expect(unescaped[position] == nal[position], "byte \(position) of a \(length)-byte NAL must stay clear")
        }
        for block in blocks {
            #expect(Array(unescaped[block]) != Array(nal[block]), "block \(block) must be encrypted")
        }
        // The existing 00 00 03 sequences are escaped a second time.
        #expect(payload.count > length)
    }

    @Test func leavesOtherNALTypesAlone() throws {
        for type: UInt8 in [2, 6, 7, 8, 9, 12, 20] {
            let nal = slice(length: 300, type: type)
            #expect(try encrypt([nal]) == [0, 0, 0, 1] + nal)
        }
    }

    @Test func chainRunsThroughBlocksOfOneNALAndRestartsAtTheNext() throws {
        let first = slice(length: 400, type: 5, seed: 7)
        let second = slice(length: 400, type: 1, seed: 7)
        let output = try encrypt([first, second])
        let expected = [0, 0, 0, 1] + Reference.encryptNAL(first) + [0, 0, 0, 1] + Reference.encryptNAL(second)
        #expect(output == expected)
        // The same NAL unit twice in one access unit comes out of the cipher identical both times: the
        // chain restarted from the IV (carried on, the second copy's first block would be chained from
        // the first copy's last ciphertext block).
        let twice = try encrypt([first, first])
        let copy = [0, 0, 0, 1] + Reference.encryptNAL(first)
        #expect(twice.count == 2 * copy.count)
        #expect(Array(twice.prefix(copy.count)) == copy && Array(twice.suffix(copy.count)) == copy)
        #expect(Array(twice.suffix(copy.count)) != [0, 0, 0, 1] + first)
    }

    @Test func ciphertextThatFormsStartCodesIsEscaped() throws {
        // Choose the plaintext so the first encrypted block comes out as 00 00 01 …, ends in 00 00 and is
        // followed by a clear 0x02: three places where a start code would appear without escaping.
        let wanted: [UInt8] = [0, 0, 1, 0x55, 0x66, 0, 0, 0, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0, 0]
        var nal = slice(length: 100, seed: 3)
        nal.replaceSubrange(32..<48, with: Reference.plaintextBlock(for: wanted, chain: Reference.iv))
        nal[48] = 0x02
        let payload = Array(try encrypt([nal])[4...])
        let encryptedRegion = Array(EmulationPrevention.unescaped(payload)[32..<48])
        #expect(encryptedRegion == wanted)
        #expect(payload == Reference.encryptNAL(nal))
        // No start code and no 00 00 0x (x ≤ 2) survives in the escaped output.
        for index in 0..<(payload.count - 2) {
            #expect(!(payload[index] == 0 && payload[index + 1] == 0 && payload[index + 2] <= 2))
        }
        let decryptor = try SampleAESCipher(key: Reference.key, iv: Reference.iv, encrypt: false)
        let decrypted = try ([0, 0, 0, 1] + payload).withUnsafeBytes { try decryptor.decryptVideo($0) }
        #expect(decrypted == [nal])
    }

    @Test(arguments: [48, 49, 64, 176, 177, 208, 209, 1000, 5000])
    func decryptorRestoresTheSource(_ length: Int) throws {
        let nals = [[0x09, 0xF0], slice(length: 30, type: 7), slice(length: length, seed: UInt32(length))]
        let output = try encrypt(nals)
        let decryptor = try SampleAESCipher(key: Reference.key, iv: Reference.iv, encrypt: false)
        let decrypted = try output.withUnsafeBytes { try decryptor.decryptVideo($0) }
        #expect(decrypted == nals)
    }

}

@Suite struct SampleAESAudioTests {
    private func adtsFrame(payload: Int, seed: UInt32) throws -> [UInt8] {
        let config = try AudioSpecificConfig([0x12, 0x10])
        return try config.adtsHeader(payloadLength: payload) + Reference.bytes(payload, seed: seed)
    }

    /// AAC payload sizes at the edges: under 32 bytes nothing is encrypted; 32 gives one block.
    @Test(arguments: [(1, 0), (16, 0), (31, 0), (32, 1), (47, 1), (48, 2), (200, 11)])
    func aacFramesEncryptWholeBlocksAfterTheLeader(_ payload: Int, _ blocks: Int) throws {
        var frame = try adtsFrame(payload: payload, seed: UInt32(payload))
        let original = frame
        let cipher = try SampleAESCipher(key: Reference.key, iv: Reference.iv, encrypt: true)
        try frame.withUnsafeMutableBytes { try cipher.processAudio($0, codec: .aac) }
        #expect(frame == Reference.encryptAudioFrame(original, clear: 7 + 16))
        // The header, the 16-byte leader and the tail stay clear.
        let encryptedEnd = min(7 + 16 + blocks * 16, frame.count)
        #expect(Array(frame.prefix(23)) == Array(original.prefix(23)))
        #expect(Array(frame[encryptedEnd...]) == Array(original[encryptedEnd...]))
        if blocks > 0 { #expect(Array(frame[23..<encryptedEnd]) != Array(original[23..<encryptedEnd])) }

        let decryptor = try SampleAESCipher(key: Reference.key, iv: Reference.iv, encrypt: false)
        try frame.withUnsafeMutableBytes { try decryptor.processAudio($0, codec: .aac) }
        #expect(frame == original)
    }

    @Test func aacFramesInOnePESEachRestartTheChain() throws {
        let first = try adtsFrame(payload: 100, seed: 9)
        let second = try adtsFrame(payload: 64, seed: 10)
        var both = first + second
        let cipher = try SampleAESCipher(key: Reference.key, iv: Reference.iv, encrypt: true)
        try both.withUnsafeMutableBytes { try cipher.processAudio($0, codec: .aac) }
        #expect(
            both == Reference.encryptAudioFrame(first, clear: 23) + Reference.encryptAudioFrame(second, clear: 23))
    }

    /// An E-AC-3 syncframe of `words` 16-bit words: independent (strmtyp 0) or dependent (1).
    static func eac3Frame(words: Int, dependent: Bool, seed: UInt32) -> [UInt8] {
        var frame = Reference.bytes(words * 2, seed: seed)
        let size = words - 1
        frame[0] = 0x0B
        frame[1] = 0x77
        frame[2] = (dependent ? 0x40 : 0x00) | UInt8(size >> 8)
        frame[3] = UInt8(size & 0xFF)
        frame[4] = 0x3F  // fscod 0 (48 kHz), numblkscod 3 (6 blocks), acmod 7, lfeon 1
        frame[5] = 16 << 3  // bsid 16
        return frame
    }

    @Test func eac3AccessUnitsEncryptEachSyncframe() throws {
        let independent = Self.eac3Frame(words: 120, dependent: false, seed: 1)
        let dependent = Self.eac3Frame(words: 57, dependent: true, seed: 2)
        let small = Self.eac3Frame(words: 15, dependent: true, seed: 3)  // 30 bytes: 16 clear, no whole block
        var unit = independent + dependent + small
        let ranges = try unit.withUnsafeBytes { try AC3SyncFrame.frames(in: $0) }
        #expect(ranges == [0..<240, 240..<354, 354..<384])
        let cipher = try SampleAESCipher(key: Reference.key, iv: Reference.iv, encrypt: true)
        try unit.withUnsafeMutableBytes { try cipher.processAudio($0, codec: .eac3) }
        let expected =
            Reference.encryptAudioFrame(independent, clear: 16) + Reference.encryptAudioFrame(dependent, clear: 16)
            + small
        #expect(unit == expected)
        // 240 bytes: 16 clear + 14 blocks, tail 0; 114 bytes: 16 clear + 6 blocks, tail 2 bytes clear.
        #expect(Array(unit[352..<354]) == Array(dependent[112..<114]))
    }

    @Test func ac3SyncframesKeepTheirHeaderInTheClearLeader() throws {
        var frame = Reference.bytes(128, seed: 4)
        frame[0] = 0x0B
        frame[1] = 0x77
        frame[4] = 0x00  // 48 kHz, frmsizecod 0: 32 kb/s, 64 words
        frame[5] = 8 << 3  // bsid 8
        let original = frame
        let cipher = try SampleAESCipher(key: Reference.key, iv: Reference.iv, encrypt: true)
        try frame.withUnsafeMutableBytes { try cipher.processAudio($0, codec: .ac3) }
        #expect(frame == Reference.encryptAudioFrame(original, clear: 16))
        #expect(Array(frame[0..<16]) == Array(original[0..<16]))
    }
}
