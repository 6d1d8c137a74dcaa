import CFFmpeg

/// FFmpeg's own logging, which GuardPlay keeps quiet so that its one-line errors speak instead.
public enum MediaLog {
    /// How much FFmpeg prints to standard error (or to the sink `route` sets).
    public enum Level: String, Sendable {
        case quiet, error, warning, info, debug

        /// The level of an FFmpeg message (`AV_LOG_PANIC` … `AV_LOG_TRACE`): fatal ones count as errors,
        /// verbose and trace ones as debug.
        init(ffmpeg level: Int32) {
            switch level {
            case ...AV_LOG_ERROR: self = .error
            case ...AV_LOG_WARNING: self = .warning
            case ...AV_LOG_INFO: self = .info
            default: self = .debug
            }
        }

        var raw: Int32 {
            switch self {
            case .quiet: AV_LOG_QUIET
            case .error: AV_LOG_ERROR
            case .warning: AV_LOG_WARNING
            case .info: AV_LOG_INFO
            case .debug: AV_LOG_DEBUG
            }
        }
    }

    /// Sets FFmpeg's global log level (`av_log_set_level`).
    public static func setLevel(_ level: Level) { av_log_set_level(level.raw) }

    /// Sends FFmpeg's messages at `level` and above to `sink`, one line at a time with the message's own
    /// level, instead of standard error (`av_log_set_callback`). For a long-running process with a log
    /// of its own, such as the gateway; `sink` is called on whatever thread FFmpeg logs from.
    public static func route(level: Level, to sink: @escaping @Sendable (Level, String) -> Void) {
        mediaLogRoute.withLock { route in
            route.sink = sink
            route.pending = ""
            route.printPrefix = 1
        }
        av_log_set_level(level.raw)
        av_log_set_callback(mediaLogReceived)
    }

    /// The libavformat version string, such as `59.27.100`.
    public static var libavformatVersion: String {
        let version = avformat_version()
        return "\(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)"
    }
}
