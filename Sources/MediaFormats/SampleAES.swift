public import Crypto

/// The SAMPLE-AES rules of Apple's "MPEG-2 Stream Encryption Format for HTTP Live Streaming": which
/// bytes of a NAL unit or audio frame are encrypted. Every protected unit restarts the CBC chain from
/// the same IV; the chain runs through that unit's encrypted blocks, across the clear bytes between them.
///
/// One cipher serves both directions: `SampleAESCipher(…, encrypt: true)` for the packager,
/// `encrypt: false` for the verifier.
public final class SampleAESCipher {
    /// Clear bytes at the start of a protected H.264 NAL unit, its header included.
    public static let videoClearLeader = 32
    /// Clear bytes after an ADTS header, and at the start of an AC-3 syncframe.
    public static let audioClearLeader = 16
    /// Distance from one encrypted video block to the next: one block encrypted, up to nine clear.
    public static let videoPatternStride = 160
    /// A NAL unit of this many bytes or fewer has no encrypted block and is left untouched.
    public static let videoMinimumProtectedLength = 48

    private let cipher: AESCBC
    private let iv: [UInt8]

    /// A cipher for `key` and `iv` (16 bytes each); `encrypt` picks the direction.
    public init(key: [UInt8], iv: [UInt8], encrypt: Bool) throws(CryptoError) {
        cipher = try AESCBC(key: key, encrypt: encrypt)
        guard iv.count == 16 else { throw CryptoError(operation: "SampleAESCipher", message: "IV must be 16 bytes") }
        self.iv = iv
    }

    /// True for the NAL unit types SAMPLE-AES protects: non-IDR (1) and IDR (5) slices.
    public static func isProtectedNALType(_ header: UInt8) -> Bool {
        let type = NALUnitType.of(header)
        return type == NALUnitType.nonIDRSlice || type == NALUnitType.idrSlice
    }

    /// Encrypts or decrypts, in place, the pattern blocks of one escaped NAL unit payload (header
    /// included, start code and the second layer of emulation prevention excluded).
    public func processVideoNAL(_ nal: UnsafeMutableRawBufferPointer) throws(CryptoError) {
        guard nal.count > SampleAESCipher.videoMinimumProtectedLength else { return }
        try cipher.restart(iv: iv)
        var offset = SampleAESCipher.videoClearLeader
        while nal.count - offset > 16 {
            try cipher.process(UnsafeMutableRawBufferPointer(rebasing: nal[offset..<(offset + 16)]))
            offset += SampleAESCipher.videoPatternStride
        }
    }

    /// Encrypts or decrypts, in place, one audio frame: `clearBytes` stay clear (ADTS header + 16 for
    /// AAC, 16 for an AC-3 syncframe), then every whole 16-byte block; a 0–15 byte tail stays clear.
    public func processAudioFrame(_ frame: UnsafeMutableRawBufferPointer, clearBytes: Int) throws(CryptoError) {
        guard frame.count - clearBytes >= 16 else { return }
        let blocks = (frame.count - clearBytes) / 16
        try cipher.restart(iv: iv)
        try cipher.process(UnsafeMutableRawBufferPointer(rebasing: frame[clearBytes..<(clearBytes + blocks * 16)]))
    }

    // MARK: Access units

    /// Appends to `output` the Annex-B access unit in `bytes` (NAL payloads at `nalUnits`) with its
    /// slices encrypted and escaped again. The slices are encrypted in place in `bytes`, which the
    /// caller gives up.
    public func encryptVideo(_ bytes: inout [UInt8], nalUnits: [Range<Int>], appendingTo output: inout [UInt8])
        throws(CryptoError)
    {
        try bytes.withMutableBytes { (source) throws(CryptoError) in
            for range in nalUnits {
                output.append(contentsOf: H264AnnexBConverter.startCode)
                let nal = UnsafeMutableRawBufferPointer(rebasing: source[range])
                guard SampleAESCipher.isProtectedNALType(nal[0]),
                    nal.count > SampleAESCipher.videoMinimumProtectedLength
                else {
                    output.appendBytes(UnsafeRawBufferPointer(nal))
                    continue
                }
                try processVideoNAL(nal)
                EmulationPrevention.escape(UnsafeRawBufferPointer(nal), appendingTo: &output)
            }
        }
    }

    /// Encrypts or decrypts, in place, every protected frame of an audio access unit: each ADTS frame
    /// of AAC, each syncframe of AC-3 and E-AC-3, with the chain restarted for each.
    public func processAudio(_ bytes: UnsafeMutableRawBufferPointer, codec: ElementaryCodec) throws {
        let readOnly = UnsafeRawBufferPointer(bytes)
        switch codec {
        case .aac:
            for (frame, header) in try ADTSHeader.frames(in: readOnly) {
                try processAudioFrame(
                    UnsafeMutableRawBufferPointer(rebasing: bytes[frame]),
                    clearBytes: header + SampleAESCipher.audioClearLeader)
            }
        case .ac3, .eac3:
            for frame in try AC3SyncFrame.frames(in: readOnly) {
                try processAudioFrame(
                    UnsafeMutableRawBufferPointer(rebasing: bytes[frame]), clearBytes: SampleAESCipher.audioClearLeader)
            }
        case .h264, .hevc:
            preconditionFailure("processAudio called for video")
        }
    }

    /// The NAL unit payloads of the Annex-B access unit `stream`, with each protected slice stripped of
    /// one layer of emulation prevention and decrypted.
    public func decryptVideo(_ stream: UnsafeRawBufferPointer) throws(CryptoError) -> [[UInt8]] {
        var nals: [[UInt8]] = []
        for range in NALUnitSplitter.annexB(stream) {
            let nal = UnsafeRawBufferPointer(rebasing: stream[range])
            guard SampleAESCipher.isProtectedNALType(nal[0]), nal.count > SampleAESCipher.videoMinimumProtectedLength
            else {
                nals.append(Array(nal))
                continue
            }
            var clear: [UInt8] = []
            clear.reserveCapacity(nal.count)
            EmulationPrevention.unescape(nal, appendingTo: &clear)
            try clear.withMutableBytes { (raw) throws(CryptoError) in try processVideoNAL(raw) }
            nals.append(clear)
        }
        return nals
    }
}

@available(*, unavailable, message: "a SampleAESCipher holds one cipher context and one owner")
extension SampleAESCipher: Sendable {}
