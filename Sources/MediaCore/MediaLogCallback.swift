import CFFmpeg
import Synchronization

/// Where FFmpeg's log goes while it is routed: the sink `MediaLog.route` set, and the start of a line
/// FFmpeg has sent only part of (its messages may come in pieces; a line ends with a newline).
struct MediaLogRoute: Sendable {
    var sink: (@Sendable (MediaLog.Level, String) -> Void)?
    var pending = ""
    /// `av_log_format_line2`'s state: whether the next piece starts a line and so gets the
    /// `[libx264 @ 0x…]` prefix.
    var printPrefix: Int32 = 1
}

/// The one route, shared by every thread FFmpeg logs from.
let mediaLogRoute = Mutex(MediaLogRoute())

/// FFmpeg's log callback (`av_log_set_callback`) while routed. A plain function, not a closure: FFmpeg
/// calls it on its own threads (x264's lookahead, frame-threaded decoders), where a closure isolated to
/// the main actor would trap. Messages above the level `av_log_set_level` set are dropped here, since
/// a callback of one's own receives them all.
func mediaLogReceived(
    _ context: UnsafeMutableRawPointer?, _ level: Int32, _ format: UnsafePointer<CChar>?,
    _ arguments: CVaListPointer?
) {
    guard level <= av_log_get_level(), let format, let arguments else { return }
    let (sink, lines) = mediaLogRoute.withLock { route -> ((@Sendable (MediaLog.Level, String) -> Void)?, [String]) in
        guard let sink = route.sink else { return (nil, []) }
        var buffer = [CChar](repeating: 0, count: 1024)
        av_log_format_line2(context, level, format, arguments, &buffer, Int32(buffer.count), &route.printPrefix)
        route.pending += buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var lines: [String] = []
        while let newline = route.pending.firstIndex(of: "\n") {
            let line = String(route.pending[..<newline]).trimmingTrailingCarriageReturns()
            route.pending.removeSubrange(...newline)
            if !line.isEmpty { lines.append(line) }
        }
        return (sink, lines)
    }
    // Outside the lock: a sink that logs through FFmpeg again must not deadlock.
    guard let sink else { return }
    for line in lines { sink(MediaLog.Level(ffmpeg: level), line) }
}

extension String {
    fileprivate func trimmingTrailingCarriageReturns() -> String {
        var text = Substring(self)
        while text.last == "\r" { text = text.dropLast() }
        return String(text)
    }
}
