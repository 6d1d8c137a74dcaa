/// What `Verifier` found: the rules each playlist and segment keeps or breaks, and per stream how many
/// access units were decrypted and how many equal the source.
public struct VerificationReport: Sendable, Equatable {
    /// The check of one elementary stream of one media playlist.
    public struct StreamCheck: Sendable, Equatable {
        /// The media playlist, such as `video.m3u8`.
        public var playlist: String
        /// `video` or `audio`.
        public var kind: String
        /// The codec as the PMT (or packed audio) declares it: `h264`, `aac`, `ac3`, `eac3`.
        public var codec: String
        /// The TS PID, or nil for packed audio.
        public var pid: Int?
        /// Access units read: video frames, or audio frames (ADTS frames, AC-3 syncframes).
        public var frames: Int
        /// NAL units or audio frames that were decrypted (their encrypted blocks processed).
        public var decryptedUnits: Int
        /// Frames equal to the source, bytes and timestamps, or nil without a source.
        public var framesEqual: Int?
        /// Frames the source has for this stream, or nil without a source.
        public var sourceFrames: Int?
        /// How the source was compared: a bit-exact copy, or a deterministic re-encode.
        public var comparison: String?
        /// True for a CMAF track (fMP4), which has no PID.
        public var isFragmented = false
    }

    /// `SAMPLE-AES`, `AES-128` or `NONE`.
    public var method: String
    /// The media playlists checked, the I-frame playlist included.
    public var playlists: [String]
    /// Segments read.
    public var segments: Int
    /// One entry per stream per playlist.
    public var streams: [StreamCheck]
    /// I-frame playlist entries checked.
    public var iFramesChecked = 0
    /// I-frame entries whose range holds PAT, PMT and exactly the IDR picture of the media playlist.
    public var iFramesEqual = 0
    /// Rules the output breaks, in words: playlist tags, versions, durations, key lines, TS structure.
    public var problems: [String] = []
    /// The first content mismatches against the source, in words.
    public var mismatches: [String] = []
    /// How many mismatches there were in all.
    public var mismatchCount = 0
    /// Notes that are not failures, such as where the key came from.
    public var notes: [String] = []

    /// True when no rule is broken and nothing differs from the source.
    public var passed: Bool { problems.isEmpty && mismatchCount == 0 }
}

/// Why verification could not run at all (as opposed to finding problems, which the report holds).
public struct VerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The classes of failure.
    public enum Kind: Sendable, Equatable {
        /// The output directory or its master playlist is missing.
        case outputMissing
        /// The output is encrypted and no key was given or found.
        case keyMissing
        /// The source could not be read; `sourceKind` says how.
        case source
    }

    /// The class of failure.
    public let kind: Kind
    /// For `source`, the packaging error that opening the source gave.
    public let sourceKind: PackagingError.Kind?
    /// What went wrong.
    public let message: String

    public var description: String { message }
}

/// Our own decryptor and rule checker for a packaged output: the test oracle.
///
/// It parses the master and media playlists and every segment, checks tags, versions, durations
/// against TARGETDURATION, the IV and key lines, PAT/PMT signalling and continuity counters, decrypts
/// every protected NAL unit and audio frame, checks the I-frame playlist's byte ranges, and with a
/// source compares each access unit, bytes and timestamps, with what the same conversion makes of the
/// source's packets. Like `PackagingJob.run`, `run` blocks.
public struct Verifier: Sendable {
    /// The packaged output directory.
    public var directory: String
    /// The content key, or nil to read it from a key URI that names a local file.
    public var key: [UInt8]?
    /// The source to compare with, or nil for structure and decryption checks only.
    public var source: String?
    /// The most pixels a video picture of the source may have (`--max-pixels`, default 8192×8192).
    public var maxPixels: Int
    /// The key list of a `--key-period` output (period 0 first), or empty: each segment is then
    /// decrypted with the key its key line and init segment name, and the key periods are checked.
    public var keyList: [PeriodKeyPair] = []

    /// A verifier for `directory`.
    public init(directory: String, key: [UInt8]? = nil, source: String? = nil, maxPixels: Int = 8192 * 8192) {
        self.directory = directory
        self.key = key
        self.source = source
        self.maxPixels = maxPixels
    }

    /// Checks the output and returns the report; throws only when it cannot check at all.
    public func run() throws(VerificationError) -> VerificationReport {
        let absolute = OutputDirectory.absolutePath(directory)
        if FragmentedVerification.isFragmented(absolute) {
            var run = FragmentedVerification(directory: absolute, key: key, source: source, maxPixels: maxPixels)
            if !keyList.isEmpty { run.periods = KeyPeriodCheck(keys: keyList) }
            return try run.execute()
        }
        var run = VerificationRun(
            directory: OutputDirectory.absolutePath(directory), key: key, source: source, maxPixels: maxPixels)
        if !keyList.isEmpty { run.periods = KeyPeriodCheck(keys: keyList) }
        return try run.execute()
    }
}
