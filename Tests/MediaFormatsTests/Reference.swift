import Crypto

@testable import MediaFormats

/// A deliberately plain reference for the SAMPLE-AES rules, written from the specification's text and
/// independent of the packager's code: one AES block at a time, the CBC chain carried by hand, the
/// emulation prevention done byte by byte with a zero counter.
enum Reference {
    static let key: [UInt8] = Array(0..<16).map { UInt8($0 * 17 & 0xFF) }
    static let iv: [UInt8] = Array(0..<16).map { UInt8(0xF0 - $0) }

    /// AES-128 of one block after XOR with `chain`: one CBC step.
    static func encryptBlock(_ block: [UInt8], chain: [UInt8], key: [UInt8] = key) -> [UInt8] {
        let cipher = try! AESCBC(key: key, encrypt: true)
        try! cipher.restart(iv: chain)
        var bytes = block
        try! cipher.process(&bytes, range: 0..<16)
        return bytes
    }

    /// The plaintext block that encrypts to `ciphertext` when chained from `chain`.
    static func plaintextBlock(for ciphertext: [UInt8], chain: [UInt8], key: [UInt8] = key) -> [UInt8] {
        let cipher = try! AESCBC(key: key, encrypt: false)
        try! cipher.restart(iv: chain)
        var bytes = ciphertext
        try! cipher.process(&bytes, range: 0..<16)
        return bytes
    }

    /// H.264 emulation prevention, one byte at a time.
    static func escape(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var zeros = 0
        for byte in bytes {
            if zeros >= 2 && byte <= 3 {
                out.append(3)
                zeros = 0
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }

    /// A SAMPLE-AES video NAL unit as the specification describes it: types 1 and 5 over 48 bytes get
    /// 32 clear bytes, then one encrypted block every 160 bytes while more than 16 bytes remain, the
    /// chain running through those blocks; then emulation prevention again.
    static func encryptNAL(_ nal: [UInt8]) -> [UInt8] {
        let type = nal[0] & 0x1F
        guard type == 1 || type == 5, nal.count > 48 else { return nal }
        var out = nal
        var chain = iv
        var offset = 32
        while nal.count - offset > 16 {
            let cipher = encryptBlock(Array(out[offset..<(offset + 16)]), chain: chain)
            out.replaceSubrange(offset..<(offset + 16), with: cipher)
            chain = cipher
            offset += 160
        }
        return escape(out)
    }

    /// A SAMPLE-AES audio frame: `clear` bytes, then whole blocks chained from the IV, tail clear.
    static func encryptAudioFrame(_ frame: [UInt8], clear: Int) -> [UInt8] {
        var out = frame
        var chain = iv
        var offset = clear
        while frame.count - offset >= 16 {
            let cipher = encryptBlock(Array(out[offset..<(offset + 16)]), chain: chain)
            out.replaceSubrange(offset..<(offset + 16), with: cipher)
            chain = cipher
            offset += 16
        }
        return out
    }

    /// Deterministic pseudo-random bytes (a linear congruential generator), so tests are repeatable.
    static func bytes(_ count: Int, seed: UInt32) -> [UInt8] {
        var state = seed &* 2_654_435_761 &+ 1
        return (0..<count).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(state >> 24)
        }
    }
}
