import Crypto
import FoundationEssentials
import Glibc
import MediaFormats

/// One segment (or playlist) file being written in the temporary output directory: filled through a
/// buffer that is handed to the job's `BackgroundWriter` when it grows past the threshold, and for
/// `METHOD=AES-128` encrypted whole as it goes (AES-128-CBC, PKCS#7 padding).
final class SegmentFile {
    /// Bytes gathered before they are handed to the writer: with its buffers in flight (`BackgroundWriter`)
    /// 2 MiB for TS and 3 MiB for CMAF, enough to cover the writer copying a whole spooled segment after
    /// its `moof` at a cut; with 256 KiB buffers the packaging thread waited on it there (the figures are
    /// in docs/PERFORMANCE.md).
    static let flushThreshold = 1 << 19

    /// The file's path.
    let path: String
    /// Bytes waiting to be written; writers append TS packets or frames here.
    private(set) var buffer: ByteBuffer
    private let writer: BackgroundWriter
    private var descriptor: Int32
    private var cipher: AESCBC?
    private var clearBytesFlushed = 0
    /// Bytes handed to the writer for the file.
    private(set) var fileBytes = 0

    /// Creates `path` (which must not exist) with mode 0644; `aes128` gives key and IV for whole-file
    /// encryption.
    init(path: String, aes128: (key: [UInt8], iv: [UInt8])?, writer: BackgroundWriter) throws(PackagingError) {
        if let failure = writer.firstFailure { throw failure }
        self.path = path
        self.writer = writer
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SegmentFile.failure("create", path) }
        if let aes128 {
            do {
                let cipher = try AESCBC(key: aes128.key, encrypt: true)
                try cipher.restart(iv: aes128.iv)
                self.cipher = cipher
            } catch {
                Glibc.close(descriptor)
                throw PackagingError(.outputFailed, "cannot set up AES-128 for \(path): \(error)")
            }
        }
        buffer = writer.takeBuffer()
    }

    deinit {
        if descriptor >= 0 {
            writer.giveBack(buffer)
            writer.close(descriptor, path: path)
        }
    }

    /// The clear offset of the next byte appended to `buffer`.
    var offset: Int { clearBytesFlushed + buffer.count }

    /// Hands the buffer to the writer once it has grown past the threshold.
    func flushIfNeeded() throws(PackagingError) {
        if buffer.count >= SegmentFile.flushThreshold { try flush(final: false) }
    }

    /// Appends the first `count` bytes of `scratch`, whose writes were all submitted to the writer
    /// before: a clear file has them copied in by the writer, in the kernel (`sendfile`); an AES-128
    /// file reads them back (once the writer has written them) through its buffer, to encrypt them.
    /// `scratchPath` names the scratch file in errors.
    func append(_ count: Int, from scratch: Int32, scratchPath: String) throws(PackagingError) {
        guard cipher != nil else {
            if buffer.count > 0 { try flush(final: false) }
            if let failure = writer.firstFailure { throw failure }
            writer.splice(count, from: scratch, to: descriptor, path: path)
            fileBytes += count
            clearBytesFlushed += count
            return
        }
        try writer.drain()
        var offset = 0
        while offset < count {
            let chunk = min(count - offset, SegmentFile.flushThreshold)
            let read = pread(scratch, buffer.extend(by: chunk), chunk, off_t(offset))
            let reason = read < 0 ? errno : 0
            buffer.truncate(to: buffer.count - chunk + max(read, 0))
            if reason == EINTR { continue }
            guard read > 0 else {
                throw PackagingError(
                    .outputFailed,
                    "cannot read back \(scratchPath): "
                        + (read < 0 ? String(cString: strerror(reason)) : "the scratch file ended early"))
            }
            offset += read
            try flushIfNeeded()
        }
    }

    /// Flushes, pads and encrypts the last block (AES-128), and queues the close; returns the file's
    /// size. Write errors surface from `BackgroundWriter.drain()`.
    @discardableResult
    func close() throws(PackagingError) -> Int {
        try flush(final: true)
        writer.giveBack(buffer)
        writer.close(descriptor, path: path)
        descriptor = -1
        return fileBytes
    }

    private func flush(final: Bool) throws(PackagingError) {
        if let failure = writer.firstFailure { throw failure }
        var length = buffer.count
        var clearLength = length
        if let cipher {
            if final {
                let pad = 16 - buffer.count % 16
                buffer.extend(by: pad).initializeMemory(as: UInt8.self, repeating: UInt8(pad), count: pad)
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
        guard length > 0 else { return }
        let next = writer.takeBuffer()
        if length < buffer.count {
            // Keep the tail that does not fill an AES block for the next flush.
            buffer.withUnsafeBytes { raw in next.append(UnsafeRawBufferPointer(rebasing: raw[length...])) }
            buffer.truncate(to: length)
        }
        writer.submit(buffer, to: descriptor, path: path)
        buffer = next
        fileBytes += length
        clearBytesFlushed += clearLength
    }

    /// An output failure naming the call and the operating system's reason.
    static func failure(_ call: String, _ path: String) -> PackagingError {
        PackagingError(.outputFailed, "cannot \(call) \(path): \(String(cString: strerror(errno)))")
    }
}

@available(*, unavailable, message: "a SegmentFile owns one file descriptor")
extension SegmentFile: Sendable {}
