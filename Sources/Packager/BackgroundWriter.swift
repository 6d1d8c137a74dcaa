import Dispatch
import Glibc
import MediaFormats
import Synchronization

/// Writes segment bytes on a serial dispatch queue of its own, so the `write(2)` calls (copying into
/// the page cache, about half of a job's time) overlap with demuxing and encrypting on the caller's
/// thread. At most `bufferCount` buffers are in flight; `submit` blocks while that many are queued,
/// which keeps memory bounded whatever the input's length.
final class BackgroundWriter: @unchecked Sendable {
    // Invariant behind @unchecked Sendable: `queue` serialises every use of a submitted buffer and file
    // descriptor; `free` and `failure` are only touched under their Mutex; a ByteBuffer belongs either
    // to the caller (taken from `free`) or to the queue (submitted), never to both.
    static let bufferCount = 4
    static let bufferCapacity = SegmentFile.flushThreshold + (1 << 16)

    private let queue = DispatchQueue(label: "guard-play.packager.writer")
    private let slots = DispatchSemaphore(value: BackgroundWriter.bufferCount)
    private let free = Mutex<[ByteBufferBox]>([])
    private let failure = Mutex<PackagingError?>(nil)

    init() {}

    /// The first write or close failure so far, if any.
    var firstFailure: PackagingError? { failure.withLock { $0 } }

    /// An empty buffer to fill: a recycled one, or a new one.
    func takeBuffer() -> ByteBuffer {
        let box = free.withLock { $0.popLast() }
        return box?.buffer ?? ByteBuffer(capacity: BackgroundWriter.bufferCapacity)
    }

    /// Writes all of `buffer` to `descriptor` on the queue, then recycles the buffer. `path` names the
    /// file in errors.
    func submit(_ buffer: ByteBuffer, to descriptor: Int32, path: String) {
        let box = ByteBufferBox(buffer: buffer)
        slots.wait()
        queue.async { [self] in
            if failure.withLock({ $0 == nil }) {
                let result = box.buffer.withUnsafeBytes { raw in BackgroundWriter.writeAll(descriptor, raw) }
                if let reason = result {
                    failure.withLock {
                        if $0 == nil { $0 = PackagingError(.outputFailed, "cannot write \(path): \(reason)") }
                    }
                }
            }
            box.buffer.removeAll()
            free.withLock { $0.append(box) }
            slots.signal()
        }
    }

    /// Hands back a buffer that was taken but not submitted.
    func giveBack(_ buffer: ByteBuffer) {
        buffer.removeAll()
        free.withLock { $0.append(ByteBufferBox(buffer: buffer)) }
    }

    /// Closes `descriptor` once everything submitted before has been written.
    func close(_ descriptor: Int32, path: String) {
        queue.async { [self] in
            if Glibc.close(descriptor) != 0 {
                let reason = String(cString: strerror(errno))
                failure.withLock {
                    if $0 == nil { $0 = PackagingError(.outputFailed, "cannot close \(path): \(reason)") }
                }
            }
        }
    }

    /// Waits until every submitted write and close has run; throws the first failure.
    func drain() throws(PackagingError) {
        queue.sync {}
        if let failure = firstFailure { throw failure }
    }

    /// `write(2)` until all of `bytes` is written; returns the reason on failure.
    private static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> String? {
        var written = 0
        while written < bytes.count {
            let result = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if result < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            written += result
        }
        return nil
    }
}

/// Carries a ByteBuffer to the writer's queue and back; ownership moves with it (see
/// `BackgroundWriter`'s invariant).
private final class ByteBufferBox: @unchecked Sendable {
    let buffer: ByteBuffer
    init(buffer: ByteBuffer) { self.buffer = buffer }
}
