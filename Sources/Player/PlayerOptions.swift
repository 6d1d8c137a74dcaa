public import Protection

/// How fast playback runs.
public enum Pacing: String, Sendable, Hashable {
    /// At the speed of the media, against the audio clock (or the wall clock without audio).
    case realtime
    /// As fast as decoding allows (writing a file, benchmarks).
    case fast
}

/// Where the output goes.
public enum OutputTarget: Sendable, Hashable {
    /// The sound card through SDL2, falling back to `null` with a note when none can be opened; video goes
    /// where `videoOutput` says.
    case device
    /// Nowhere: decoded, protected and dropped.
    case null
    /// A file whose container follows the extension (`.wav .flac .m4a .mkv .mp4`), holding what a capture
    /// would record: muted audio and masked video.
    case file(path: String)
}

/// Where realtime video goes when the output is the device.
public enum VideoOutput: Sendable, Hashable {
    /// Decoded, protected and dropped.
    case null
    /// An SDL2 window; when it cannot be opened, playback fails if `required`, and otherwise goes on with
    /// `null` and a warning.
    case window(required: Bool)
}

/// Everything that shapes one playback.
public struct PlayerOptions: Sendable {
    /// The media file.
    public var path: String
    /// Media time to start at, in seconds.
    public var start: Double = 0
    /// How much to play from `start`, in seconds; nil for to the end.
    public var length: Double?
    /// Linear gain applied to audio (1 leaves samples untouched).
    public var volume: Double = 1
    /// Starts muted by the user.
    public var muted = false
    /// Plays the audio stream (when there is one).
    public var audioEnabled = true
    /// Plays the video stream (when there is one).
    public var videoEnabled = true
    /// How many times to play; 0 means forever.
    public var loops = 1
    /// Realtime or fast.
    public var pacing: Pacing = .realtime
    /// Where the output goes.
    public var output: OutputTarget = .device
    /// Where video goes when `output` is the device.
    public var videoOutput: VideoOutput = .null
    /// How masked frames look.
    public var mask: MaskStyle = .black
    /// Where the window flickers (`--flicker`), or nil for no flicker.
    public var flicker: FlickerArea?
    /// Decoder threads; 0 lets FFmpeg choose (frame threading on every core).
    public var decoderThreads = 0
    /// The most pixels a video picture may have (`--max-pixels`, default 8192×8192); larger video is
    /// refused before any decoder allocates for it (see MediaCore's `PictureSizeLimit`).
    public var maxPixels = 8192 * 8192

    /// Creates options for `path` with the defaults.
    public init(path: String) {
        self.path = path
    }
}

/// A failure of the player, with the kind a command line maps to an exit code.
public struct PlayerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, broadly.
    public enum Kind: Sendable, Hashable {
        case inputMissing, inputEmpty, inputNotMedia, inputUnrecognised, inputTruncated, inputNoStreams
        case inputUnsupported, maskImage, output, device, other
        /// The output file is the input (the same file, however spelled or linked).
        case outputIsInput
        /// The video's pictures are over `maxPixels`, or their size cannot be decoded.
        case inputPictureTooLarge
    }

    /// The kind of failure.
    public let kind: Kind
    /// One line for the user.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
