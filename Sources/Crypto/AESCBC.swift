import COpenSSL

/// Owner of an `EVP_CIPHER_CTX` set up for AES-128-CBC with no padding (`EVP_CIPHER_CTX_new`, freed
/// with `EVP_CIPHER_CTX_free` in `deinit`). OpenSSL uses AES-NI when the CPU has it.
///
/// SAMPLE-AES encrypts scattered 16-byte blocks of one NAL or audio frame as a single CBC chain:
/// `restart(iv:)` begins a chain and each `process` call continues it, in place.
public final class AESCBC {
    private let context: OpaquePointer
    private let encrypting: Bool

    /// Sets up a cipher for `key` (16 bytes); `encrypt` chooses the direction.
    public init(key: [UInt8], encrypt: Bool) throws(CryptoError) {
        guard key.count == 16 else {
            throw CryptoError(operation: "AESCBC", message: "key must be 16 bytes, got \(key.count)")
        }
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new: out of memory") }
        self.context = context
        encrypting = encrypt
        try check(
            EVP_CipherInit_ex(context, EVP_aes_128_cbc(), nil, key, nil, encrypt ? 1 : 0),
            "EVP_CipherInit_ex(AES-128-CBC)")
        EVP_CIPHER_CTX_set_padding(context, 0)
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Starts a new CBC chain from `iv` (16 bytes) without setting the key up again.
    public func restart(iv: [UInt8]) throws(CryptoError) {
        guard iv.count == 16 else {
            throw CryptoError(operation: "AESCBC.restart", message: "IV must be 16 bytes, got \(iv.count)")
        }
        try check(EVP_CipherInit_ex(context, nil, nil, nil, iv, -1), "EVP_CipherInit_ex(IV)")
    }

    /// Encrypts or decrypts `buffer` in place, continuing the current chain; its length must be a
    /// multiple of 16.
    public func process(_ buffer: UnsafeMutableRawBufferPointer) throws(CryptoError) {
        guard buffer.count > 0 else { return }
        guard buffer.count % 16 == 0, let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            throw CryptoError(operation: "AESCBC.process", message: "length \(buffer.count) is not a multiple of 16")
        }
        var written: Int32 = 0
        try check(EVP_CipherUpdate(context, base, &written, base, Int32(buffer.count)), "EVP_CipherUpdate")
    }

    /// Encrypts or decrypts `bytes[range]` in place, continuing the current chain.
    public func process(_ bytes: inout [UInt8], range: Range<Int>) throws(CryptoError) {
        let result = bytes.withUnsafeMutableBytes { raw in
            Result { () throws(CryptoError) in try process(UnsafeMutableRawBufferPointer(rebasing: raw[range])) }
        }
        try result.get()
    }
}

@available(*, unavailable, message: "an AESCBC cipher context has one owner")
extension AESCBC: Sendable {}

/// Whole-message AES-128-CBC with PKCS#7 padding, as HLS `METHOD=AES-128` uses for whole segments.
public enum AES128Padded {
    /// Encrypts `plaintext` under `key` and `iv` (16 bytes each) with PKCS#7 padding.
    public static func encrypt(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try run(plaintext, key: key, iv: iv, encrypt: true)
    }

    /// Decrypts `ciphertext`, checking and removing the PKCS#7 padding.
    public static func decrypt(_ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try run(ciphertext, key: key, iv: iv, encrypt: false)
    }

    private static func run(_ input: [UInt8], key: [UInt8], iv: [UInt8], encrypt: Bool) throws(CryptoError)
        -> [UInt8]
    {
        guard key.count == 16, iv.count == 16 else {
            throw CryptoError(operation: "AES-128-CBC", message: "key and IV must be 16 bytes each")
        }
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new: out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        let name = encrypt ? "encrypt" : "decrypt"
        try check(
            EVP_CipherInit_ex(context, EVP_aes_128_cbc(), nil, key, iv, encrypt ? 1 : 0),
            "EVP_CipherInit_ex(AES-128-CBC \(name))")
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        var final: Int32 = 0
        try check(
            EVP_CipherUpdate(context, &output, &written, input, Int32(input.count)),
            "EVP_CipherUpdate(AES-128-CBC \(name))")
        let status = output.withUnsafeMutableBufferPointer { out in
            EVP_CipherFinal_ex(context, out.baseAddress! + Int(written), &final)
        }
        try check(status, "EVP_CipherFinal_ex(AES-128-CBC \(name))")
        output.removeLast(output.count - Int(written + final))
        return output
    }
}
