import MediaFormats

/// Rotated CMAF output in `verify`: a key period's init segment (`tenc` key ID) and its key line must
/// name the same key of the key list, and that key decrypts the period's segments.
extension FragmentedVerification {
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
