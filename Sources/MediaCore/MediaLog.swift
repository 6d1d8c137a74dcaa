import CFFmpeg

/// FFmpeg's own logging, which GuardPlay keeps quiet so that its one-line errors speak instead.
public enum MediaLog {
    /// How much FFmpeg prints to standard error.
    public enum Level: Sendable {
        case quiet, error, warning, info, debug

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

    /// The libavformat version string, such as `59.27.100`.
    public static var libavformatVersion: String {
        let version = avformat_version()
        return "\(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)"
    }
}
