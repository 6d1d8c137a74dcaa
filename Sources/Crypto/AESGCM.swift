import COpenSSL

/// AES-256-GCM sealing, used to wrap content keys at rest under a key-encryption key.
///
/// A sealed box is `nonce (12) ‖ ciphertext ‖ tag (16)`; the nonce is fresh from OpenSSL's RNG.
public enum AESGCM {
    /// Bytes of nonce at the front of a sealed box.
    public static let nonceSize = 12
    /// Bytes of authentication tag at the end of a sealed box.
    public static let tagSize = 16

    /// Encrypts and authenticates `plaintext` (and `associatedData`, which is not stored) under a
    /// 32-byte `key`.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(CryptoError)
        -> [UInt8]
    {
        try requireKey(key)
        let nonce = try SecureRandom.bytes(nonceSize)
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new: out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        try check(EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce), "EVP_EncryptInit_ex(AES-256-GCM)")
        var written: Int32 = 0
        if !associatedData.isEmpty {
            try check(
                EVP_EncryptUpdate(context, nil, &written, associatedData, Int32(associatedData.count)),
                "EVP_EncryptUpdate(AES-256-GCM aad)")
        }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        try check(
            EVP_EncryptUpdate(context, &ciphertext, &written, plaintext, Int32(plaintext.count)),
            "EVP_EncryptUpdate(AES-256-GCM)")
        var final: Int32 = 0
        let status = ciphertext.withUnsafeMutableBufferPointer { out in
            EVP_EncryptFinal_ex(context, out.baseAddress! + Int(written), &final)
        }
        try check(status, "EVP_EncryptFinal_ex(AES-256-GCM)")
        ciphertext.removeLast(ciphertext.count - Int(written + final))
        var tag = [UInt8](repeating: 0, count: tagSize)
        try check(
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagSize), &tag), "EVP_CTRL_GCM_GET_TAG")
        return nonce + ciphertext + tag
    }

    /// Checks and decrypts a sealed box; a wrong key, a changed byte or different associated data is
    /// an error, never garbage.
    public static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(CryptoError)
        -> [UInt8]
    {
        try requireKey(key)
        guard box.count >= nonceSize + tagSize else {
            throw CryptoError(operation: "AESGCM.open", message: "sealed box is \(box.count) bytes, too short")
        }
        let nonce = Array(box[0..<nonceSize])
        let ciphertext = Array(box[nonceSize..<(box.count - tagSize)])
        var tag = Array(box[(box.count - tagSize)...])
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new: out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        try check(EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce), "EVP_DecryptInit_ex(AES-256-GCM)")
        var written: Int32 = 0
        if !associatedData.isEmpty {
            try check(
                EVP_DecryptUpdate(context, nil, &written, associatedData, Int32(associatedData.count)),
                "EVP_DecryptUpdate(AES-256-GCM aad)")
        }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        try check(
            EVP_DecryptUpdate(context, &plaintext, &written, ciphertext, Int32(ciphertext.count)),
            "EVP_DecryptUpdate(AES-256-GCM)")
        try check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagSize), &tag), "EVP_CTRL_GCM_SET_TAG")
        var final: Int32 = 0
        let status = plaintext.withUnsafeMutableBufferPointer { out in
            EVP_DecryptFinal_ex(context, out.baseAddress! + Int(written), &final)
        }
        guard status == 1 else {
            ERR_clear_error()
            throw CryptoError(
                operation: "EVP_DecryptFinal_ex(AES-256-GCM)",
                message: "authentication failed: wrong key or altered data")
        }
        plaintext.removeLast(plaintext.count - Int(written + final))
        return plaintext
    }

    private static func requireKey(_ key: [UInt8]) throws(CryptoError) {
        guard key.count == 32 else {
            throw CryptoError(operation: "AESGCM", message: "key must be 32 bytes, got \(key.count)")
        }
    }
}
