import Crypto
import MediaFormats

/// What `verify` makes of a key list (`--key-file` of a `--key-period` output): which key each key
/// line names (the key ID in hex in its URI, as `{kid}` put it there), and whether the playlists'
/// key periods are the key list's, in order, of one length.
struct KeyPeriodCheck {
    /// The key list, period 0 first.
    let keys: [PeriodKeyPair]
    private var ciphers: [String: SampleAESCipher] = [:]

    init(keys: [PeriodKeyPair]) { self.keys = keys }

    /// The position in the list of the key whose key ID a key line's URI names, or nil.
    func index(for line: AttributeList?) -> Int? {
        guard let uri = line?["URI"]?.lowercased() else { return nil }
        return keys.firstIndex { uri.contains($0.keyID.hexString) }
    }

    /// The key a key line names, or nil.
    func key(for line: AttributeList?) -> [UInt8]? { index(for: line).map { keys[$0].key } }

    /// The key whose key ID is `keyID`, or nil.
    func key(keyID: [UInt8]) -> [UInt8]? { keys.first { $0.keyID == keyID }?.key }

    /// A SAMPLE-AES decryptor for a key line's key and IV, made once per line, or nil when the line
    /// names no key of the list or has no 16-byte IV.
    mutating func sampleAESCipher(for line: AttributeList?) -> SampleAESCipher? {
        guard let key = key(for: line), let ivText = line?["IV"], let iv = [UInt8](hex: ivText), iv.count == 16 else {
            return nil
        }
        let name = (line?["URI"] ?? "") + " " + ivText.uppercased()
        if let cipher = ciphers[name] { return cipher }
        let cipher = try? SampleAESCipher(key: key, iv: iv, encrypt: false)
        ciphers[name] = cipher
        return cipher
    }

    /// The problems of the playlists' key periods: every segment's key line must name a key of the list,
    /// the periods follow the list's order without a key coming back, and every period but each
    /// playlist's last spans the same number of segments in every playlist. `notes` gets the period length.
    func problems(_ playlists: [(name: String, segments: [ParsedMediaPlaylist.Segment])], notes: inout [String])
        -> [String]
    {
        var found: [String] = []
        var lengths = Set<Int>()
        for (name, segments) in playlists {
            var periods: [(index: Int, count: Int)] = []
            for segment in segments {
                guard let index = index(for: segment.key) else {
                    found.append(
                        "\(name) line \(segment.line): the key line of \(segment.uri) names no key ID of the key list")
                    continue
                }
                if periods.last?.index == index {
                    periods[periods.count - 1].count += 1
                } else {
                    periods.append((index, 1))
                }
            }
            let order = periods.map(\.index)
            if order != Array(0..<order.count) {
                found.append(
                    "\(name): its key periods use the key list's keys \(order.map(String.init).joined(separator: ",")), "
                        + "not each in turn from the first")
            }
            lengths.formUnion(periods.dropLast().map(\.count))
            if let last = periods.last, let longest = periods.dropLast().map(\.count).max(), last.count > longest {
                found.append(
                    "\(name): its last key period spans \(last.count) segments, more than the others' \(longest)")
            }
        }
        if lengths.count > 1 {
            found.append("the key periods span different numbers of segments: \(lengths.sorted())")
        } else if let length = lengths.first {
            notes.append("keys rotate every \(length) segments (\(keys.count) keys in the key list)")
        }
        return found
    }
}
