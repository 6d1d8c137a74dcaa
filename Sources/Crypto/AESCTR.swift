import COpenSSL

/// Owner of an `EVP_CIPHER_CTX` set up for AES-128-CTR (`EVP_CIPHER_CTX_new`, freed with
/// `EVP_CIPHER_CTX_free` in `deinit`).
///
/// CENC's `cenc` scheme encrypts the protected ranges of one sample as one key stream: `restart(counter:)`
/// begins it from a 16-byte counter block and each `process` call continues it, in place, whatever the
/// lengths. Encryption and decryption are the same operation.
public final class AESCTR {
    private let context: OpaquePointer

    /// Sets up a cipher for `key` (16 bytes).
    public init(key: [UInt8]) throws(CryptoError) {
        guard key.count == 16 else {
            throw CryptoError(operation: "AESCTR", message: "key must be 16 bytes, got \(key.count)")
        }
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new: out of memory") }
        self.context = context
        guard EVP_CipherInit_ex(context, EVP_aes_128_ctr(), nil, key, nil, 1) == 1 else {
            throw CryptoError.fromQueue("EVP_CipherInit_ex(AES-128-CTR)")
        }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Starts a new key stream from the counter block `counter` (16 bytes).
    public func restart(counter: [UInt8]) throws(CryptoError) {
        guard counter.count == 16 else {
            throw CryptoError(operation: "AESCTR.restart", message: "counter must be 16 bytes, got \(counter.count)")
        }
        guard EVP_CipherInit_ex(context, nil, nil, nil, counter, -1) == 1 else {
            throw CryptoError.fromQueue("EVP_CipherInit_ex(counter)")
        }
    }

    /// Encrypts or decrypts `bytes[range]` in place, continuing the current key stream.
    public func process(_ bytes: inout [UInt8], range: Range<Int>) throws(CryptoError) {
        guard !range.isEmpty else { return }
        let result = bytes.withUnsafeMutableBytes { raw in
            Result { () throws(CryptoError) in try process(UnsafeMutableRawBufferPointer(rebasing: raw[range])) }
        }
        try result.get()
    }

    /// Encrypts or decrypts `buffer` in place, continuing the current key stream.
    public func process(_ buffer: UnsafeMutableRawBufferPointer) throws(CryptoError) {
        guard buffer.count > 0, let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var written: Int32 = 0
        guard EVP_CipherUpdate(context, base, &written, base, Int32(buffer.count)) == 1 else {
            throw CryptoError.fromQueue("EVP_CipherUpdate(AES-128-CTR)")
        }
    }
}

@available(*, unavailable, message: "an AESCTR cipher context has one owner")
extension AESCTR: Sendable {}
