import Crypto
import Foundation
import Testing

struct Vectors: Decodable {
    struct CBC: Decodable { let key, iv, plaintext, ciphertext: String }
    struct MAC: Decodable { let key, data, mac: String }
    struct Hash: Decodable { let data, digest: String }
    struct CTR: Decodable { let key, counter, plaintext, ciphertext: String }
    let cbc: [CBC]
    let ctr: [CTR]
    let hmac: [MAC]
    let sha256: [Hash]

    static let published: Vectors = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("vectors.json")
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()
}

func bytes(_ hex: String) -> [UInt8] { [UInt8](hex: hex)! }

@Suite struct AESCBCTests {
    @Test(arguments: Vectors.published.cbc.indices)
    func encryptsAndDecryptsPublishedVector(_ index: Int) throws {
        let vector = Vectors.published.cbc[index]
        var data = bytes(vector.plaintext)
        let encryptor = try AESCBC(key: bytes(vector.key), encrypt: true)
        try encryptor.restart(iv: bytes(vector.iv))
        try encryptor.process(&data, range: 0..<data.count)
        #expect(data.hexString == vector.ciphertext)

        let decryptor = try AESCBC(key: bytes(vector.key), encrypt: false)
        try decryptor.restart(iv: bytes(vector.iv))
        try decryptor.process(&data, range: 0..<data.count)
        #expect(data.hexString == vector.plaintext)
    }

    @Test func chainContinuesAcrossCallsAndRestartsOnRequest() throws {
        let vector = Vectors.published.cbc[0]
        var data = bytes(vector.plaintext)
        let cipher = try AESCBC(key: bytes(vector.key), encrypt: true)
        try cipher.restart(iv: bytes(vector.iv))
        // Block by block with gaps between calls: one chain, as SAMPLE-AES needs.
        for block in stride(from: 0, to: data.count, by: 16) {
            try cipher.process(&data, range: block..<(block + 16))
        }
        #expect(data.hexString == vector.ciphertext)
        var again = bytes(vector.plaintext)
        try cipher.restart(iv: bytes(vector.iv))
        try cipher.process(&again, range: 0..<16)
        #expect(Array(again[0..<16]) == Array(data[0..<16]))
    }

    @Test func rejectsBadSizes() throws {
        #expect(throws: CryptoError.self) { try AESCBC(key: [UInt8](repeating: 0, count: 15), encrypt: true) }
        let cipher = try AESCBC(key: [UInt8](repeating: 0, count: 16), encrypt: true)
        #expect(throws: CryptoError.self) { try cipher.restart(iv: [1, 2, 3]) }
        var odd = [UInt8](repeating: 0, count: 20)
        #expect(throws: CryptoError.self) { try cipher.process(&odd, range: 0..<20) }
    }

    @Test func paddedRoundTripAndWrongKey() throws {
        let key = try SecureRandom.bytes(16)
        let iv = try SecureRandom.bytes(16)
        for length in [0, 1, 15, 16, 17, 1000] {
            let plaintext = try SecureRandom.bytes(length)
            let ciphertext = try AES128Padded.encrypt(plaintext, key: key, iv: iv)
            #expect(ciphertext.count == (length / 16 + 1) * 16)
            #expect(try AES128Padded.decrypt(ciphertext, key: key, iv: iv) == plaintext)
        }
        // The first block of the vector, padded: its first 16 ciphertext bytes are the unpadded ones.
        let vector = Vectors.published.cbc[0]
        let padded = try AES128Padded.encrypt(bytes(vector.plaintext), key: bytes(vector.key), iv: bytes(vector.iv))
        #expect(Array(padded[0..<64]).hexString == vector.ciphertext)
    }
}

@Suite struct AESCTRTests {
    @Test(arguments: Vectors.published.ctr.indices)
    func encryptsPublishedVectorInPiecesOfAnyLength(_ index: Int) throws {
        let vector = Vectors.published.ctr[index]
        var data = bytes(vector.plaintext)
        let cipher = try AESCTR(key: bytes(vector.key))
        try cipher.restart(counter: bytes(vector.counter))
        // Uneven pieces, as CENC's protected ranges are: one key stream across the calls.
        var start = 0
        for length in [5, 16, 27, 0, 16] {
            try cipher.process(&data, range: start..<(start + length))
            start += length
        }
        #expect(start == data.count)
        #expect(data.hexString == vector.ciphertext)
        try cipher.restart(counter: bytes(vector.counter))
        try cipher.process(&data, range: 0..<data.count)
        #expect(data.hexString == vector.plaintext)
    }

    @Test func rejectsBadSizes() throws {
        #expect(throws: CryptoError.self) { try AESCTR(key: [UInt8](repeating: 0, count: 15)) }
        let cipher = try AESCTR(key: [UInt8](repeating: 0, count: 16))
        #expect(throws: CryptoError.self) { try cipher.restart(counter: [1, 2, 3]) }
    }
}

@Suite struct AESGCMTests {
    @Test func sealsAndOpens() throws {
        let key = try SecureRandom.bytes(32)
        let secret = try SecureRandom.bytes(16)
        let box = try AESGCM.seal(secret, key: key, associatedData: Array("kid-1".utf8))
        #expect(box.count == 12 + 16 + 16)
        #expect(try AESGCM.open(box, key: key, associatedData: Array("kid-1".utf8)) == secret)
        #expect(try AESGCM.seal(secret, key: key) != AESGCM.seal(secret, key: key), "nonces must differ")
    }

    @Test func refusesTamperingWrongKeyAndWrongContext() throws {
        let key = try SecureRandom.bytes(32)
        let box = try AESGCM.seal(Array("content key 16b!".utf8), key: key, associatedData: [1])
        for position in [0, 12, box.count - 1] {
            var altered = box
            altered[position] ^= 0x01
            #expect(throws: CryptoError.self) { try AESGCM.open(altered, key: key, associatedData: [1]) }
        }
        #expect(throws: CryptoError.self) { try AESGCM.open(box, key: SecureRandom.bytes(32), associatedData: [1]) }
        #expect(throws: CryptoError.self) { try AESGCM.open(box, key: key, associatedData: [2]) }
        #expect(throws: CryptoError.self) { try AESGCM.open(Array(box[0..<20]), key: key) }
        #expect(throws: CryptoError.self) { try AESGCM.seal([1], key: [1, 2]) }
    }
}

@Suite struct DigestTests {
    @Test(arguments: Vectors.published.hmac.indices)
    func hmacMatchesRFC4231(_ index: Int) {
        let vector = Vectors.published.hmac[index]
        #expect(Digest.hmacSHA256(key: bytes(vector.key), data: bytes(vector.data)).hexString == vector.mac)
    }

    @Test(arguments: Vectors.published.sha256.indices)
    func sha256MatchesFIPS(_ index: Int) {
        let vector = Vectors.published.sha256[index]
        #expect(Digest.sha256(bytes(vector.data)).hexString == vector.digest)
    }

    @Test func constantTimeEquality() {
        #expect(Digest.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!Digest.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!Digest.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(Digest.constantTimeEquals([], []))
    }

    @Test func hexParsing() {
        #expect([UInt8](hex: "0x00ff10") == [0, 255, 16])
        #expect([UInt8](hex: "ABcd") == [0xAB, 0xCD])
        #expect([UInt8](hex: "abc") == nil)
        #expect([UInt8](hex: "zz") == nil)
        #expect([UInt8]([0, 1, 0xfe]).hexString == "0001fe")
    }

    @Test func randomBytesDiffer() throws {
        let a = try SecureRandom.bytes(16)
        let b = try SecureRandom.bytes(16)
        #expect(a.count == 16 && a != b)
    }
}
