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

    /// The bytes `text` encodes, or nil unless it is strict base64url without padding: only the
    /// alphabet, no length of 4n + 1, and zero bits past the last byte.
    static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 4 != 1, characters.count <= 1024 else { return nil }
        var values: [UInt32] = []
        values.reserveCapacity(characters.count)
        for character in characters {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            values.append(UInt32(value))
        }
        var out: [UInt8] = []
        var index = 0
        while index + 4 <= values.count {
            let group = values[index] << 18 | values[index + 1] << 12 | values[index + 2] << 6 | values[index + 3]
            out += [UInt8(group >> 16), UInt8(group >> 8 & 0xFF), UInt8(group & 0xFF)]
            index += 4
        }
        switch values.count - index {
        case 2:
            guard values[index + 1] & 0x0F == 0 else { return nil }
            out.append(UInt8(values[index] << 2 | values[index + 1] >> 4))
        case 3:
            guard values[index + 2] & 0x03 == 0 else { return nil }
            let group = values[index] << 10 | values[index + 1] << 4 | values[index + 2] >> 2
            out += [UInt8(group >> 8), UInt8(group & 0xFF)]
        default: break
        }
        return out
    }
}
