import Glibc

/// Standard output or standard error, written with `write(2)` (what `FileHandle.standardError.write`
/// did, without Foundation).
public enum StandardStream: Sendable {
    case output, error

    private var descriptor: Int32 { self == .output ? STDOUT_FILENO : STDERR_FILENO }

    /// Writes all of `text`, retrying after signals and short writes; a closed stream loses it.
    public func write(_ text: String) {
        var bytes = Array(text.utf8)
        writeAll(descriptor, &bytes)
    }
}

/// Writes all of `bytes` to `descriptor`, retrying after `EINTR` and short writes; false when a write fails.
@discardableResult
public func writeAll(_ descriptor: Int32, _ bytes: inout [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        offset += written
    }
    return true
}
