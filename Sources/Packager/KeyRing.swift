import Crypto

/// One key period's key: its key ID, content key and IV (the EXT-X-KEY IV in TS, the `tenc` constant
/// IV under `cbcs`, the base of the segment IVs under AES-128).
struct PeriodKey: Equatable {
    var keyID: [UInt8]
    var key: [UInt8]
    var iv: [UInt8]
}

/// The keys of a job's key periods (`--key-period N`: a new key every N segments of each playlist):
/// period 0 holds the given or drawn key, and every later period's key, key ID and IV are drawn from
/// OpenSSL's RNG the first time a segment of that period is written, so no more keys exist than
/// periods. Without rotation every segment is in period 0.
final class KeyRing {
    /// The most segments one key period may span.
    static let periodLimit = 100_000

    /// Segments per key period, or nil for one key.
    let period: Int?
    /// The keys drawn so far, period 0 first.
    private(set) var keys: [PeriodKey]

    /// A ring whose period 0 is `first`.
    init(first: PeriodKey, period: Int?) {
        self.period = period
        keys = [first]
    }

    /// The key period segment `index` of a playlist belongs to.
    func period(ofSegment index: Int) -> Int { period.map { index / $0 } ?? 0 }

    /// True when segment `index` starts a key period (so its playlist names a new key before it).
    func startsPeriod(_ index: Int) -> Bool { index == 0 || (period.map { index % $0 == 0 } ?? false) }

    /// The key of period `number`, drawing it (and those before it) when it is new.
    func key(period number: Int) throws(PackagingError) -> PeriodKey {
        while keys.count <= number {
            do {
                keys.append(
                    PeriodKey(
                        keyID: try SecureRandom.bytes(16), key: try SecureRandom.bytes(16),
                        iv: try SecureRandom.bytes(16)))
            } catch {
                throw PackagingError(.outputFailed, "cannot draw a random key for key period \(keys.count): \(error)")
            }
        }
        return keys[number]
    }

    /// The key of the period segment `index` belongs to.
    func key(forSegment index: Int) throws(PackagingError) -> PeriodKey { try key(period: period(ofSegment: index)) }
}

@available(*, unavailable, message: "a KeyRing belongs to one packaging run")
extension KeyRing: Sendable {}

/// The key list `--key-file` holds under `--key-period`: one line per key period, the key ID and the
/// key in hex separated by one space (`KID KEY\n`), in period order.
public enum KeyListFormat {
    /// The bytes of one line: 32 + 1 + 32 hex digits and a newline.
    public static let lineLength = 66
    /// The most lines a key list file may hold when it is read back.
    public static let lineLimit = 1_000_000

    /// The list's text for `keys` (key ID, key).
    public static func render(_ keys: [(keyID: [UInt8], key: [UInt8])]) -> String {
        keys.map { "\($0.keyID.hexString) \($0.key.hexString)\n" }.joined()
    }

    /// The (key ID, key) pairs in `bytes`, or nil unless every non-empty line is a 16-byte key ID and a
    /// 16-byte key in hex and no key ID repeats.
    public static func parse(_ bytes: [UInt8]) -> [(keyID: [UInt8], key: [UInt8])]? {
        guard bytes.count <= lineLimit * (lineLength + 1) else { return nil }
        var pairs: [(keyID: [UInt8], key: [UInt8])] = []
        var seen = Set<[UInt8]>()
        for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 2, let keyID = [UInt8](hex: String(fields[0])), keyID.count == 16,
                let key = [UInt8](hex: String(fields[1])), key.count == 16, seen.insert(keyID).inserted
            else { return nil }
            pairs.append((keyID, key))
        }
        return pairs.isEmpty ? nil : pairs
    }
}
