import Crypto

/// Key IDs and keys as the W3C Clear Key formats carry them (Encrypted Media Extensions §9.1): the
/// 16 bytes in base64url without padding, where the gateway's catalog names a key ID by 32 lower-case
/// hex digits.
public enum ClearKeyID {
    /// The 32 hex digits of the key ID `text` encodes, or nil unless it is exactly 22 base64url
    /// characters (16 bytes, no padding) with no stray bits in the last one.
    public static func hexKID(base64URL text: String) -> String? {
        guard text.utf8.count == 22, let bytes = Base64URL.decode(text), bytes.count == 16 else { return nil }
        return bytes.hexString
    }

    /// The base64url text (no padding) of the key ID named by 32 hex digits, or nil for other text.
    public static func base64URL(hexKID kid: String) -> String? {
        guard kid.utf8.count == 32, let bytes = [UInt8](hex: kid) else { return nil }
        return Base64URL.encode(bytes)
    }

    /// `bytes` in base64url without padding, as a license carries a key.
    public static func base64URL(_ bytes: [UInt8]) -> String { Base64URL.encode(bytes) }
}
