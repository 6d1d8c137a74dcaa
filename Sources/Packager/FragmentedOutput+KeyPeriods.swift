import MediaFormats

extension FragmentedOutput {
    /// The init segment's file name for key period `period`: period 0's is `initURI`, and each later
    /// period's init segment (its own `tenc` key ID and IV) is named after its number.
    func initURI(period: Int) -> String { period == 0 ? initURI : "\(name)_init_p\(period).mp4" }

    /// Writes the init segment of key period `period`, the track protected by `encryption` (always clear
    /// itself: the playlists name it before the period's key line).
    func writeInitSegment(period: Int, encryption: TrackEncryption?) throws(PackagingError) {
        guard var track else { return }
        track.encryption = encryption
        let file = try SegmentFile(path: directory + "/" + initURI(period: period), aes128: nil, writer: writer)
        file.buffer.append(FragmentedMP4Writer.initSegment(track))
        try file.close()
    }
}

/// The CENC sample ciphers of a CMAF run's key periods, each set up once, for the tracks that write
/// segments of neighbouring periods at the same time (audio and video cut apart).
final class PeriodCiphers {
    let scheme: CENCScheme
    private let ring: KeyRing
    private var ciphers: [Int: CENCSampleCipher] = [:]

    /// Ciphers for `scheme` under the keys of `ring`.
    init(scheme: CENCScheme, ring: KeyRing) {
        self.scheme = scheme
        self.ring = ring
    }

    /// The cipher and the constant IV (`cbcs`; the first 8 bytes seed `cenc`'s) of the period segment
    /// `index` of a track belongs to.
    func cipher(forSegment index: Int) throws(PackagingError) -> (cipher: CENCSampleCipher, iv: [UInt8]) {
        let period = ring.period(ofSegment: index)
        let key = try ring.key(period: period)
        if let cipher = ciphers[period] { return (cipher, key.iv) }
        let cipher: CENCSampleCipher
        do {
            cipher = try CENCSampleCipher(scheme: scheme, key: key.key, encrypt: true)
        } catch {
            throw PackagingError(.invalidOptions, "cannot set up \(scheme.rawValue) encryption: \(error)")
        }
        // Tracks are at most a period or so apart, so older periods' ciphers are not needed again.
        ciphers = ciphers.filter { $0.key >= period - 2 }
        ciphers[period] = cipher
        return (cipher, key.iv)
    }
}

@available(*, unavailable, message: "PeriodCiphers belong to one packaging run")
extension PeriodCiphers: Sendable {}
