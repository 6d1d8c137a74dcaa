/// Exit codes. Each failure a user can cause has its own, so scripts can tell them apart; the table
/// is in the README.
enum ExitCode: Int32, Sendable {
    case success = 0
    /// A failure while running: I/O, a device, an internal error.
    case failure = 1
    /// An unknown option, a missing value or a missing argument.
    case usage = 2
    /// An option value that does not parse, such as a malformed `--simulate-recording` spec.
    case badValue = 3
    /// The input file does not exist or cannot be read.
    case inputMissing = 10
    /// The input file is empty.
    case inputEmpty = 11
    /// The input is text, not media.
    case inputNotMedia = 12
    /// The input is binary data in no format FFmpeg knows.
    case inputUnrecognised = 13
    /// The input is cut short.
    case inputTruncated = 14
    /// The input has neither an audio nor a video stream.
    case inputNoStreams = 15
    /// The input uses a codec this build cannot decode or the command refuses.
    case inputUnsupported = 16
    /// The input is already encrypted.
    case inputEncrypted = 17
    /// The player: the video's pictures are over `--max-pixels`, or their size cannot be decoded.
    case inputPictureTooLarge = 18
    /// The output cannot be written, or exists and `--force` was not given.
    case outputFailed = 20
    /// The output directory or key file already exists and `--force` was not given.
    case outputExists = 21
    /// `verify` found a mismatch.
    case verifyMismatch = 30
    /// `verify` found the output breaks the HLS, TS or SAMPLE-AES rules, or could not read it.
    case verifyInvalid = 31
    /// `catalogue`: some file was not packaged or did not verify.
    case catalogueFailed = 40
    /// `watermark detect`: the copy matches none of the asset's sessions.
    case watermarkNoMatch = 50
    /// `watermark detect`: the copy shows too few segments to decide.
    case watermarkNotEnoughMaterial = 51
    /// `watermark detect`: the suspect is a still image.
    case watermarkStillImage = 52
    /// `watermark detect`: the suspect has audio and no video.
    case watermarkAudioOnly = 53
    /// `watermark detect`: the asset has no A/B watermark.
    case watermarkAssetUnmarked = 54
    /// `watermark detect`: the store has no such asset.
    case watermarkAssetUnknown = 55
    /// The command was interrupted by a signal.
    case interrupted = 130
}

/// A failure the user should read: one line, and the exit code that classifies it.
struct CLIError: Error, Sendable {
    let code: ExitCode
    let message: String

    init(_ code: ExitCode, _ message: String) {
        self.code = code
        self.message = message
    }
}
