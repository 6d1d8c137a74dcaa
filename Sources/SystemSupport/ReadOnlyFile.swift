import Glibc

/// A file open for reading (`open(2)` with `O_CLOEXEC`), closed when the value goes: what
/// `FileHandle(forReadingAtPath:)` was used for, without Foundation.
public final class ReadOnlyFile {
    /// The open descriptor.
    public let descriptor: Int32

    /// Opens `path`, or nil when it cannot be opened.
    public init?(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes from the current offset: fewer only at the end of the file or on a read error.
    public func read(upTo count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + filled, count - filled) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            filled += got
        }
        bytes.removeLast(count - filled)
        return bytes
    }

    /// The first `count` bytes of the file at `path` (fewer when it is shorter), or nil when it cannot be opened.
    public static func head(of path: String, count: Int) -> [UInt8]? {
        ReadOnlyFile(path: path)?.read(upTo: count)
    }
}

@available(*, unavailable)
extension ReadOnlyFile: Sendable {}
