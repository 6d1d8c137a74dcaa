import Crypto
import Foundation
import Glibc

/// One segment (or playlist) file being written in the temporary output directory: buffered, written
/// with `write(2)`, and for `METHOD=AES-128` encrypted whole as it goes (AES-128-CBC, PKCS#7 padding).
final class SegmentFile {
    /// Bytes gathered before a `write(2)`.
    static let flushThreshold = 1 << 18

    /// The file's path.
    let path: String
    /// Bytes waiting to be written; writers append TS packets or frames here.
    let buffer = ByteBuffer(capacity: SegmentFile.flushThreshold + (1 << 16))
    private var descriptor: Int32
    private var cipher: AESCBC?
    /// Clear bytes accepted so far, flushed or not: the offset the next byte will have in the clear file.
    private(set) var clearBytesFlushed = 0
    /// Bytes in the file.
    private(set) var fileBytes = 0

    /// Creates `path` (which must not exist) with mode 0644; `aes128` gives key and IV for whole-file
    /// encryption.
    init(path: String, aes128: (key: [UInt8], iv: [UInt8])?) throws(PackagingError) {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SegmentFile.failure("create", path) }
        if let aes128 {
            do {
                let cipher = try AESCBC(key: aes128.key, encrypt: true)
                try cipher.restart(iv: aes128.iv)
                self.cipher = cipher
            } catch {
                throw PackagingError(.outputFailed, "cannot set up AES-128 for \(path): \(error)")
            }
        }
    }

    deinit { if descriptor >= 0 { Glibc.close(descriptor) } }

    /// The clear offset of the next byte appended to `buffer`.
    var offset: Int { clearBytesFlushed + buffer.count }

    /// Writes the buffer out once it has grown past the threshold.
    func flushIfNeeded() throws(PackagingError) {
        if buffer.count >= SegmentFile.flushThreshold { try flush(final: false) }
    }

    /// Flushes, pads and encrypts the last block (AES-128) and closes the file; returns its size.
    @discardableResult
    func close() throws(PackagingError) -> Int {
        try flush(final: true)
        let status = Glibc.close(descriptor)
        descriptor = -1
        guard status == 0 else { throw SegmentFile.failure("close", path) }
        return fileBytes
    }

    private func flush(final: Bool) throws(PackagingError) {
        var length = buffer.count
        var clearLength = length
        if let cipher {
            if final {
                let pad = 16 - buffer.count % 16
                let padding = buffer.extend(by: pad).assumingMemoryBound(to: UInt8.self)
                padding.update(repeating: UInt8(pad), count: pad)
                length = buffer.count
            } else {
                length -= length % 16
                clearLength = length
            }
            do {
                try buffer.withUnsafeMutableBytes { raw in
                    try cipher.process(UnsafeMutableRawBufferPointer(rebasing: raw[0..<length]))
                }
            } catch {
                throw PackagingError(.outputFailed, "AES-128 encryption of \(path) failed: \(error)")
            }
        }
        var written = 0
        while written < length {
            let result = buffer.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress! + written, length - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw SegmentFile.failure("write", path)
            }
            written += result
        }
        fileBytes += length
        clearBytesFlushed += clearLength
        buffer.removeFirst(length)
    }

    /// An output failure naming the call and the operating system's reason.
    static func failure(_ call: String, _ path: String) -> PackagingError {
        PackagingError(.outputFailed, "cannot \(call) \(path): \(String(cString: strerror(errno)))")
    }
}

@available(*, unavailable, message: "a SegmentFile owns one file descriptor")
extension SegmentFile: Sendable {}
