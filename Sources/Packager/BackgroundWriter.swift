import Dispatch
import Glibc
import MediaFormats
import Synchronization

/// Writes segment bytes on a serial dispatch queue of its own, so the `write(2)` calls (copying into
/// the page cache, about half of a job's time) overlap with demuxing and encrypting on the caller's
/// thread; it also copies a CMAF segment's spooled samples after its `moof` (`splice`). At most
/// `bufferCount` buffers are in flight; `submit` blocks while that many are queued, which keeps memory
/// bounded whatever the input's length.
final class BackgroundWriter: @unchecked Sendable {
    // Invariant behind @unchecked Sendable: `queue` serialises every use of a submitted buffer and file
    // descriptor; `free` and `failure` are only touched under their Mutex; a ByteBuffer belongs either
    // to the caller (taken from `free`) or to the queue (submitted), never to both. A cipher submitted
    // in a `DeferredEncryption` is processed on the queue only: the caller no longer uses it itself.
    static let bufferCapacity = SegmentFile.flushThreshold + (1 << 16)

    /// Buffers in flight for a TS job: 2 MiB.
    static let transportStreamBuffers = 4
    /// Buffers in flight for a CMAF job: 3 MiB, as its writer also encrypts every sample and copies
    /// each spooled segment after its `moof`, in bursts at the cuts. Four cost fMP4 about a tenth of its
    /// time, waiting on the writer; TS gains nothing from six and keeps its peak RSS lower.
    static let fragmentedBuffers = 6

    private let queue = DispatchQueue(label: "guard-play.packager.writer")
    private let slots: DispatchSemaphore
    private let free = Mutex<[ByteBufferBox]>([])
    private let failure = Mutex<PackagingError?>(nil)

    /// A writer with at most `bufferCount` buffers in flight.
    init(bufferCount: Int = BackgroundWriter.transportStreamBuffers) {
        slots = DispatchSemaphore(value: bufferCount)
    }

    /// The first write or close failure so far, if any.
    var firstFailure: PackagingError? { failure.withLock { $0 } }

    /// An empty buffer to fill: a recycled one, or a new one.
    func takeBuffer() -> ByteBuffer {
        let box = free.withLock { $0.popLast() }
        return box?.buffer ?? ByteBuffer(capacity: BackgroundWriter.bufferCapacity)
    }

    /// Writes all of `buffer` to `descriptor` on the queue, at its file position or at `offset`
    /// (`pwrite`), then recycles the buffer; the samples in it are encrypted there first, as
    /// `encryptions` say. `path` names the file in errors.
    func submit(
        _ buffer: ByteBuffer, to descriptor: Int32, at offset: Int? = nil, path: String,
        encrypting encryptions: [DeferredEncryption] = []
    ) {
        let box = ByteBufferBox(buffer: buffer, encryptions: encryptions)
        slots.wait()
        queue.async { [self] in
            if failure.withLock({ $0 == nil }) {
                let refusal = box.buffer.withMutableBytes { bytes in
                    box.encryptions.lazy.compactMap { $0.run(bytes) }.first
                }
                if let refusal {
                    fail(refusal)
                } else {
                    let result = box.buffer.withUnsafeBytes { BackgroundWriter.writeAll(descriptor, $0, at: offset) }
                    if let reason = result { fail("cannot write \(path): \(reason)") }
                }
            }
            box.buffer.removeAll()
            box.encryptions = []
            free.withLock { $0.append(box) }
            slots.signal()
        }
    }

    /// Copies the first `count` bytes of `source` to `descriptor` at its file position, in the kernel
    /// (`sendfile`, page cache to page cache), once everything submitted before has been written;
    /// `source`'s own file position does not move. `path` names the target in errors.
    func splice(_ count: Int, from source: Int32, to descriptor: Int32, path: String) {
        queue.async { [self] in
            guard failure.withLock({ $0 == nil }) else { return }
            var offset = off_t(0)
            while offset < count {
                let copied = sendfile(descriptor, source, &offset, count - Int(offset))
                if copied < 0 && errno == EINTR { continue }
                if copied <= 0 {
                    let reason = copied < 0 ? String(cString: strerror(errno)) : "the scratch file ended early"
                    fail("cannot copy the spooled samples into \(path): \(reason)")
                    return
                }
            }
        }
    }

    /// Hands back a buffer that was taken but not submitted.
    func giveBack(_ buffer: ByteBuffer) {
        buffer.removeAll()
        free.withLock { $0.append(ByteBufferBox(buffer: buffer, encryptions: [])) }
    }

    /// Closes `descriptor` once everything submitted before has been written.
    func close(_ descriptor: Int32, path: String) {
        queue.async { [self] in
            if Glibc.close(descriptor) != 0 { fail("cannot close \(path): \(String(cString: strerror(errno)))") }
        }
    }

    /// Waits until every submitted write and close has run; throws the first failure.
    func drain() throws(PackagingError) {
        queue.sync {}
        if let failure = firstFailure { throw failure }
    }

    /// Keeps `reason` as the first failure unless there is one already.
    private func fail(_ reason: String) {
        failure.withLock { if $0 == nil { $0 = PackagingError(.outputFailed, reason) } }
    }

    /// `write(2)` (or `pwrite(2)` at `offset`) until all of `bytes` is written; returns the reason on
    /// failure.
    private static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int?) -> String? {
        var written = 0
        while written < bytes.count {
            let start = bytes.baseAddress! + written
            let result =
                if let offset {
                    pwrite(descriptor, start, bytes.count - written, off_t(offset + written))
                } else {
                    write(descriptor, start, bytes.count - written)
                }
            if result < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            written += result
        }
        return nil
    }
}

/// Carries a ByteBuffer and the encryption of its samples to the writer's queue and back; ownership
/// moves with it (see `BackgroundWriter`'s invariant), and so does the use of the ciphers.
private final class ByteBufferBox: @unchecked Sendable {
    let buffer: ByteBuffer
    var encryptions: [DeferredEncryption]
    init(buffer: ByteBuffer, encryptions: [DeferredEncryption]) {
        self.buffer = buffer
        self.encryptions = encryptions
    }
}
