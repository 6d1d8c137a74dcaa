import MediaFormats

/// Rotated CMAF output in `verify`: a key period's init segment (`tenc` key ID) and its key line must
/// name the same key of the key list, and that key decrypts the period's segments.
extension FragmentedVerification {
    /// Every EXT-X-MAP line of a playlist's text: its line number (from 1) and URI.
    static func mapLines(_ text: String) -> [(line: Int, uri: String)] {
        var maps: [(line: Int, uri: String)] = []
        for (number, line) in text.split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }
        ).enumerated()
        where line.hasPrefix("#EXT-X-MAP:") {
            if let uri = try? AttributeList(strict: String(line.dropFirst(11)), structure: "EXT-X-MAP")["URI"] {
                maps.append((number + 1, uri))
            }
        }
        return maps
    }

    /// The EXT-X-MAP in force for `segment`: the last one above its URI line.
    static func map(of segment: ParsedMediaPlaylist.Segment, in maps: [(line: Int, uri: String)]) -> String? {
        maps.last { $0.line < segment.line }?.uri
    }

    /// The key a track's init segment asks for: with a key list, the one its `tenc` key ID names.
    func trackKey(_ info: TrackInfo) -> [UInt8]? {
        guard let periods, info.scheme != nil else { return key }
        return periods.key(keyID: info.keyID)
    }

    /// What is wrong with `segment`'s key period, or nil: the init segment's `tenc` key ID must be in
    /// the key list and be the one the segment's key line names.
    func periodProblem(_ segment: ParsedMediaPlaylist.Segment, info: TrackInfo, map: String) -> String? {
        guard let periods, info.scheme != nil else { return nil }
        guard let listed = periods.keys.firstIndex(where: { $0.keyID == info.keyID }) else {
            return "\(map): tenc names key ID \(info.keyID.hexString), which is not in the key list"
        }
        guard let named = periods.index(for: segment.key), named == listed else {
            return "\(segment.uri): its key line names another key than its init segment \(map)'s tenc key ID "
                + info.keyID.hexString
        }
        return nil
    }
}
