import MediaFormats

/// Key rotation in CMAF (`--key-period`): each key period's segments are encrypted under its own key,
/// named by its own `tenc` (key ID, and `cbcs`'s constant IV) in an init segment of its own, so the
/// playlists name a new EXT-X-MAP and EXT-X-KEY where each period starts, and the DASH manifest a new
/// Period (see `dashManifest`).
extension FragmentedPackagingRun {
    /// The key line before segment `index` under `cbcs` or `cenc`: one where each key period starts.
    func periodKeyLine(segment index: Int) throws(PackagingError) -> KeyLine? {
        guard keys.ring.startsPeriod(index), var line = keyLine(iv: nil) else { return nil }
        line.uri = try keys.uri(period: keys.ring.period(ofSegment: index))
        return line
    }

    /// The AES-128 key line before segment `index`, with its IV and its period's key URI.
    func keyLine(iv: [UInt8]?, segment index: Int) throws(PackagingError) -> KeyLine? {
        guard var line = keyLine(iv: iv) else { return nil }
        line.uri = try keys.uri(period: keys.ring.period(ofSegment: index))
        return line
    }

    /// The EXT-X-MAP before segment `index` of `output` where a later key period starts under CENC, or nil.
    func periodMap(_ output: FragmentedOutput, segment index: Int) -> String? {
        guard index > 0, keys.ring.startsPeriod(index), output.track?.encryption != nil else { return nil }
        return output.initURI(period: keys.ring.period(ofSegment: index))
    }

    /// Writes the init segments of `output`'s key periods after the first, each with its period's key ID
    /// and IV in `tenc`.
    func writePeriodInitSegments(_ output: FragmentedOutput) throws(PackagingError) {
        guard let encryption = output.track?.encryption, !output.segments.isEmpty else { return }
        let last = keys.ring.period(ofSegment: output.segments.count - 1)
        guard last > 0 else { return }
        for period in 1...last {
            let key = try keys.ring.key(period: period)
            var periodEncryption = encryption
            periodEncryption.keyID = key.keyID
            if periodEncryption.constantIV != nil { periodEncryption.constantIV = key.iv }
            try output.writeInitSegment(period: period, encryption: periodEncryption)
        }
    }
}
