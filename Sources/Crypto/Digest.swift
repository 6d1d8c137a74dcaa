import COpenSSL

/// HMAC-SHA256, SHA-256 and constant-time comparison from OpenSSL's libcrypto.
public enum Digest {
    /// HMAC-SHA256 of `data` under `key` (`HMAC` with `EVP_sha256`), 32 bytes.
    public static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(key.count), data, data.count, &output, &length)
        }
        precondition(result != nil && length == 32, "HMAC(SHA-256) failed")
        return output
    }

    /// SHA-256 of `data` (`EVP_Digest`), 32 bytes.
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let status = data.withUnsafeBytes { bytes in
            EVP_Digest(bytes.baseAddress, data.count, &output, &length, EVP_sha256(), nil)
        }
        precondition(status == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return output
    }

    /// True when `a` and `b` are equal, taking the same time whatever their contents
    /// (`CRYPTO_memcmp`); unequal lengths are unequal at once.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }
}

/// Random bytes from OpenSSL's CSPRNG.
public enum SecureRandom {
    /// `count` random bytes (`RAND_bytes`).
    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return output }
        try check(RAND_bytes(&output, Int32(count)), "RAND_bytes(\(count))")
        return output
    }
}
