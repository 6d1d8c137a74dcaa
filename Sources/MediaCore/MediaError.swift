import CFFmpeg

/// An FFmpeg failure: the call that failed, what it was working on, FFmpeg's own text and its code.
///
/// Its description reads like
/// `avformat_open_input(song.m4a): Invalid data found when processing input (-1094995529)`.
public struct MediaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is, for callers that map errors to exit codes or statuses.
    public enum Kind: Sendable, Equatable {
        /// The file does not exist or cannot be opened.
        case notFound
        /// The data is not a media format FFmpeg recognises, or is corrupt.
        case invalidData
        /// The file starts as a format FFmpeg recognises but cannot be opened: its index or data ends early,
        /// or points past the end (see `InputContext.init`).
        case truncated
        /// A video stream's pictures are larger than the `PictureSizeLimit` allows.
        case pictureTooLarge
        /// A video stream's picture size cannot be decoded: its header is damaged or claims a size FFmpeg
        /// itself refuses (such as an SPS of 65536×65536).
        case undecodablePicture
        /// The stream needs a decoder or encoder this FFmpeg build lacks.
        case unsupported
        /// Reading or writing failed at the operating-system level.
        case io
        /// Anything else.
        case other
    }

    /// The FFmpeg (negative AVERROR) code, or 0 when the failure is GuardPlay's own check.
    public let code: Int32
    /// The C call or step that failed, with its subject, such as `avformat_open_input(song.m4a)`.
    public let operation: String
    /// FFmpeg's text for the code (`av_strerror`), or GuardPlay's own reason.
    public let message: String
    /// The classified kind of failure.
    public let kind: Kind

    /// Wraps an FFmpeg return code.
    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
        self.message = MediaError.text(for: code)
        self.kind = MediaError.classify(code)
    }

    /// A failure found by GuardPlay's own checks rather than returned by FFmpeg.
    public init(operation: String, message: String, kind: Kind = .other) {
        self.code = 0
        self.operation = operation
        self.message = message
        self.kind = kind
    }

    /// The same failure under another kind, for a caller that knows more about it than its code says.
    public func reclassified(as kind: Kind) -> MediaError {
        MediaError(code: code, operation: operation, message: message, kind: kind)
    }

    private init(code: Int32, operation: String, message: String, kind: Kind) {
        self.code = code
        self.operation = operation
        self.message = message
        self.kind = kind
    }

    public var description: String {
        code == 0 ? "\(operation): \(message)" : "\(operation): \(message) (\(code))"
    }

    /// FFmpeg's text for an AVERROR code (`av_strerror`).
    static func text(for code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        if av_strerror(code, &buffer, buffer.count) < 0 {
            return "unknown error"
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    static func classify(_ code: Int32) -> Kind {
        switch code {
        case cffmpeg_averror(ENOENT), cffmpeg_averror(EACCES), cffmpeg_averror(EISDIR):
            return .notFound
        case cffmpeg_averror_invaliddata(), cffmpeg_averror_eof():
            return .invalidData
        case cffmpeg_averror_decoder_not_found(), cffmpeg_averror(ENOSYS):
            return .unsupported
        case cffmpeg_averror(EIO), cffmpeg_averror(ENOSPC):
            return .io
        default:
            return .other
        }
    }
}

/// Throws a `MediaError` when an FFmpeg call returned a negative code; returns the code otherwise.
@discardableResult
func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(MediaError) -> Int32 {
    if code < 0 {
        throw MediaError(code: code, operation: operation())
    }
    return code
}
