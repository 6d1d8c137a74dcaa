public import Crypto

/// The Common Encryption schemes the packager writes (ISO/IEC 23001-7).
public enum CENCScheme: String, Sendable, Equatable {
    /// AES-128-CBC with a pattern over each subsample and a constant IV: what HLS calls SAMPLE-AES in
    /// fMP4, and FairPlay, Widevine and PlayReady accept.
    case cbcs
    /// AES-128-CTR over whole 16-byte-aligned protected ranges with an 8-byte IV per sample: the DASH
    /// default.
    case cenc

    /// The bytes of IV each sample carries in `senc`: none with `cbcs`'s constant IV.
    public var perSampleIVSize: Int { self == .cbcs ? 0 : 8 }
}

/// One subsample of an encrypted sample: clear bytes, then protected bytes (`senc`'s
/// BytesOfClearData and BytesOfProtectedData).
public struct Subsample: Equatable, Sendable {
    public var clear: Int
    public var protected: Int

    /// A subsample of `clear` bytes, then `protected` bytes.
    public init(clear: Int, protected: Int) {
        self.clear = clear
        self.protected = protected
    }
}

/// The subsample map of a length-prefixed video sample.
public enum SubsampleMap {
    /// The largest BytesOfClearData a subsample can carry (16 bits).
    static let maximumClearRun = 65_535

    /// The map for NAL units given in order as their stored size (length prefix included) and the bytes
    /// at their start that stay clear (the whole unit for a non-VCL NAL unit; prefix, header and slice
    /// header for a slice). Consecutive clear bytes are merged, clear runs over 65,535 bytes are split,
    /// and under `cenc` each protected range is shortened to whole 16-byte blocks, its remainder moving
    /// to the clear bytes before it.
    public static func make(_ units: [(size: Int, clear: Int)], scheme: CENCScheme) -> [Subsample] {
        var map: [Subsample] = []
        var pendingClear = 0
        func emit(_ clear: Int, _ protected: Int) {
            var clear = clear
            while clear > maximumClearRun {
                map.append(Subsample(clear: maximumClearRun, protected: 0))
                clear -= maximumClearRun
            }
            map.append(Subsample(clear: clear, protected: protected))
        }
        for unit in units {
            var clear = min(unit.clear, unit.size)
            var protected = unit.size - clear
            if scheme == .cenc {
                clear += protected % 16
                protected -= protected % 16
            }
            pendingClear += clear
            if protected > 0 {
                emit(pendingClear, protected)
                pendingClear = 0
            }
        }
        if pendingClear > 0 { emit(pendingClear, 0) }
        return map
    }
}

/// Encrypts or decrypts samples in place under one CENC scheme and key.
///
/// - `cbcs`: each subsample's protected range starts a CBC chain from the constant IV; the pattern
///   (`crypt` blocks encrypted, `skip` left clear) runs from its first byte, a crypt block is encrypted
///   when 16 bytes remain for it, and a trailing partial block stays clear. A sample without subsamples
///   (audio) has every whole block encrypted, its tail clear.
/// - `cenc`: one AES-CTR key stream per sample from its 8-byte IV (the counter's low 8 bytes zero),
///   running over the protected ranges one after the other.
public final class CENCSampleCipher {
    public let scheme: CENCScheme
    private let cbc: AESCBC?
    private let ctr: AESCTR?
    /// The crypt blocks of one `cbcs` subsample, gathered for one CBC call; grown as needed, reused.
    private var scratch: [UInt8] = []

    /// A cipher for `scheme` with `key`; `encrypt` chooses the direction (the same for `cenc`).
    public init(scheme: CENCScheme, key: [UInt8], encrypt: Bool) throws(CryptoError) {
        self.scheme = scheme
        switch scheme {
        case .cbcs:
            cbc = try AESCBC(key: key, encrypt: encrypt)
            ctr = nil
        case .cenc:
            cbc = nil
            ctr = try AESCTR(key: key)
        }
    }

    /// Processes `sample` with its `subsamples` (empty for a whole-sample audio frame), its `iv` (the
    /// constant 16-byte IV for `cbcs`, the sample's 8-byte IV for `cenc`) and the `cbcs` pattern.
    public func process(
        _ sample: inout [UInt8], subsamples: [Subsample], iv: [UInt8], crypt: Int = 1, skip: Int = 9
    ) throws(CryptoError) {
        try sample.withMutableBytes { raw throws(CryptoError) in
            try process(raw, subsamples: subsamples, iv: iv, crypt: crypt, skip: skip)
        }
    }

    /// Processes the sample in `sample` in place, as `process(_:subsamples:iv:crypt:skip:)` does an array.
    public func process(
        _ sample: UnsafeMutableRawBufferPointer, subsamples: [Subsample], iv: [UInt8], crypt: Int = 1, skip: Int = 9
    ) throws(CryptoError) {
        let ranges: [Range<Int>]
        if subsamples.isEmpty {
            ranges = [0..<sample.count]
        } else {
            var offset = 0
            var protected: [Range<Int>] = []
            for subsample in subsamples {
                offset += subsample.clear
                protected.append(offset..<(offset + subsample.protected))
                offset += subsample.protected
            }
            guard offset == sample.count else {
                throw CryptoError(
                    operation: "CENC \(scheme.rawValue)",
                    message: "the subsamples cover \(offset) bytes of a \(sample.count)-byte sample")
            }
            ranges = protected
        }
        if let ctr {
            try ctr.restart(counter: iv + [UInt8](repeating: 0, count: 16 - iv.count))
            for range in ranges { try ctr.process(UnsafeMutableRawBufferPointer(rebasing: sample[range])) }
            return
        }
        guard let cbc else { return }
        let wholeBlocks = subsamples.isEmpty || crypt == 0
        for range in ranges where range.count >= 16 {
            try cbc.restart(iv: iv)
            if wholeBlocks {
                try cbc.process(
                    UnsafeMutableRawBufferPointer(
                        rebasing: sample[range.lowerBound..<(range.upperBound - range.count % 16)]))
                continue
            }
            try processPattern(UnsafeMutableRawBufferPointer(rebasing: sample[range]), crypt: crypt, skip: skip)
        }
    }

    /// Copies whole 16-byte blocks as two 8-byte words each: `memmove` for every block of the 1:9
    /// pattern cost more than the copy.
    @inline(__always)
    private static func copyBlocks(to target: UnsafeMutableRawPointer, from source: UnsafeRawPointer, byteCount: Int) {
        var offset = 0
        while offset < byteCount {
            target.storeBytes(
                of: source.loadUnaligned(fromByteOffset: offset, as: UInt64.self), toByteOffset: offset, as: UInt64.self
            )
            target.storeBytes(
                of: source.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self), toByteOffset: offset + 8,
                as: UInt64.self)
            offset += 16
        }
    }

    /// Runs one CBC chain over the crypt blocks of the pattern in `range`: they are gathered into
    /// `scratch`, processed in one call (a call per 16-byte block cost more than the AES itself), and put
    /// back. A crypt run is cut to the whole blocks left; a trailing partial block stays clear. The walk
    /// counts blocks, so its loops divide nothing.
    private func processPattern(_ range: UnsafeMutableRawBufferPointer, crypt: Int, skip: Int) throws(CryptoError) {
        guard let cbc, let base = range.baseAddress else { return }
        let blocks = range.count / 16
        let period = crypt + skip
        let gathered = 16 * ((blocks / period) * crypt + min(crypt, blocks % period))
        if scratch.count < gathered { scratch = [UInt8](repeating: 0, count: gathered) }
        try scratch.withMutableBytes { buffer throws(CryptoError) in
            guard let target = buffer.baseAddress else { return }
            Self.walkPattern(blocks: blocks, crypt: crypt, period: period) { block, filled, length in
                Self.copyBlocks(to: target + filled, from: base + 16 * block, byteCount: length)
            }
            try cbc.process(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<gathered]))
            Self.walkPattern(blocks: blocks, crypt: crypt, period: period) { block, filled, length in
                Self.copyBlocks(to: base + 16 * block, from: target + filled, byteCount: length)
            }
        }
    }

    /// Calls `body` with each crypt run of `blocks` whole blocks under a pattern of `crypt` blocks in
    /// every `period`: its first block, the bytes gathered before it, and its length in bytes.
    @inline(__always)
    private static func walkPattern(blocks: Int, crypt: Int, period: Int, _ body: (Int, Int, Int) -> Void) {
        var block = 0
        var filled = 0
        while block < blocks {
            let length = 16 * min(crypt, blocks - block)
            body(block, filled, length)
            filled += length
            block += period
        }
    }
}

@available(*, unavailable, message: "a CENCSampleCipher owns cipher contexts")
extension CENCSampleCipher: Sendable {}
