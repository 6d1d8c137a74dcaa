import Crypto

/// IDs that appear in URLs: assets, sessions, jobs, tokens. The grammar is `[A-Za-z0-9_-]{1,64}`;
/// nothing else is ever looked up.
public enum Identifier {
    /// True when `text` matches `[A-Za-z0-9_-]{1,64}`.
    public static func isValid(_ text: some StringProtocol) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= 64 else { return false }
        return bytes.allSatisfy(isIDByte)
    }

    /// True for the bytes an ID may hold.
    public static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// A fresh random ID: `prefix` and 32 hex digits (128 bits from OpenSSL's RNG).
    public static func random(prefix: String) -> String {
        prefix + randomHex(16)
    }

    /// `count` random bytes as hex.
    static func randomHex(_ count: Int) -> String {
        // RAND_bytes fails only when OpenSSL cannot seed; nothing can be issued safely then.
        guard let bytes = try? SecureRandom.bytes(count) else { fatalError("RAND_bytes failed: no randomness") }
        return bytes.hexString
    }
}

/// Base64url without padding (RFC 4648 §5), for MACs in tokens.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [18, 12, 6, 0].map { alphabet[Int((value >> $0) & 63)] }
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let value = UInt32(bytes[index]) << 16
            out += [18, 12].map { alphabet[Int((value >> $0) & 63)] }
        } else if rest == 2 {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [18, 12, 6].map { alphabet[Int((value >> $0) & 63)] }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
