/// Why a packaging job refused or failed: a kind callers map to exit codes or HTTP statuses, and one
/// message that says what happened, why, and what to do instead.
public struct PackagingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The classes of failure a caller can act on.
    public enum Kind: Sendable, Equatable {
        /// The input file does not exist or cannot be read.
        case inputMissing
        /// The input file is empty.
        case inputEmpty
        /// The input is text, not media.
        case inputNotMedia
        /// The input is binary data in no format FFmpeg knows.
        case inputUnrecognised
        /// The input is cut short or its media data is corrupt.
        case inputCorrupt
        /// The input has neither an audio nor a video stream the packager can carry.
        case inputNoStreams
        /// A codec the packager refuses or cannot convert: HEVC or other non-H.264 video in TS, an audio
        /// codec with no decoder.
        case unsupportedCodec
        /// A codec the chosen container does not carry but the other one does: HEVC with `--container
        /// ts`, AC-3 or E-AC-3 with `--container fmp4` (exit 16, as `unsupportedCodec`).
        case containerUnsupported
        /// The input is already encrypted (CENC `encv`/`enca`, or SAMPLE-AES stream types).
        case encryptedInput
        /// The output directory or key file exists and `force` was not set, or `force` may not replace
        /// it (a directory the packager did not write, a symbolic link, a file that is not a key).
        case outputExists
        /// An output would land on an input: the output directory is or holds the input or the key
        /// file, or the key file is the input or lies inside the output.
        case pathConflict
        /// The output could not be written.
        case outputFailed
        /// An option value is invalid or options contradict each other.
        case invalidOptions
        /// The job was cancelled before it finished; nothing was published.
        case cancelled
    }

    /// The class of failure.
    public let kind: Kind
    /// What happened, why, and what to do instead.
    public let message: String

    /// Creates an error of `kind`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
