import Glibc
import MediaFormats

/// The open CMAF segment's sample bytes, between their encryption and the cut. A segment's `moof`
/// precedes its `mdat` and describes every sample, so the samples cannot go to the segment file as
/// they are made; rather than held in memory until the cut (about 4.5 MB of video at 6 Mb/s and
/// 6 s), they are spooled through the job's `BackgroundWriter` into a scratch file in the temporary
/// output directory, and at the cut follow the `moof` into the segment file (`SegmentFile.append`):
/// what stays in memory is a writer buffer or two, whatever the segment's length.
///
/// The scratch file is unlinked as soon as it is open, so it never shows in the output and goes with
/// its descriptor, after success, failure or a kill; each segment's bytes overwrite the last one's.
final class SegmentPayloadSpool {
    private let writer: BackgroundWriter
    private let path: String
    private let descriptor: Int32
    /// The buffer samples are built in, once taken from the writer.
    private var buffer: ByteBuffer?
    /// The encryption of the samples in `buffer`, which the writer runs before writing it.
    private var encryptions: [DeferredEncryption] = []
    /// Bytes of the open segment handed to the writer for the scratch file.
    private var spooled = 0

    /// A spool whose scratch file is created as `name` in `directory` (where it must not exist) and
    /// unlinked at once.
    init(directory: String, name: String, writer: BackgroundWriter) throws(PackagingError) {
        let path = directory + "/" + name
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SegmentFile.failure("create the scratch file", path) }
        guard unlink(path) == 0 else {
            let failure = SegmentFile.failure("unlink the scratch file", path)
            Glibc.close(descriptor)
            throw failure
        }
        self.writer = writer
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        if let buffer { writer.giveBack(buffer) }
        writer.close(descriptor, path: path)
    }

    /// The buffer the next sample's bytes go to, with room for about `count` more bytes: samples are
    /// kept whole in one buffer, so they can be encrypted where they lie. A buffer that would grow past
    /// the writer's threshold goes to the scratch file first.
    func sampleBuffer(reserving count: Int) -> ByteBuffer {
        if let buffer {
            if buffer.count == 0 || buffer.count + count <= SegmentFile.flushThreshold { return buffer }
            spool(buffer)
        }
        let next = writer.takeBuffer()
        buffer = next
        return next
    }

    /// Has the writer encrypt a sample that was just appended to the buffer `sampleBuffer(reserving:)`
    /// gave, before it writes that buffer.
    func encryptLater(_ encryption: DeferredEncryption) { encryptions.append(encryption) }

    /// Appends the open segment's bytes to `file` (after its `moof`) and starts the next segment.
    func move(to file: SegmentFile) throws(PackagingError) {
        if let buffer {
            self.buffer = nil
            if buffer.count > 0 { spool(buffer) } else { writer.giveBack(buffer) }
        }
        let count = spooled
        spooled = 0
        try file.append(count, from: descriptor, scratchPath: path)
    }

    /// Hands `buffer` to the writer, for the scratch file after the bytes spooled before.
    private func spool(_ buffer: ByteBuffer) {
        let count = buffer.count
        writer.submit(buffer, to: descriptor, at: spooled, path: path, encrypting: encryptions)
        encryptions.removeAll(keepingCapacity: true)
        spooled += count
    }
}

@available(*, unavailable, message: "a SegmentPayloadSpool belongs to one FragmentedOutput")
extension SegmentPayloadSpool: Sendable {}

/// A sample's CENC encryption, handed with the buffer it lies in to the `BackgroundWriter`, which runs
/// it just before writing the buffer: the cipher then costs the writer's thread, not the packaging
/// thread (the longer of the two). A cipher handed over this way is used on the writer's queue only.
struct DeferredEncryption {
    let cipher: CENCSampleCipher
    /// The sample's bytes in the buffer.
    let range: Range<Int>
    let subsamples: [Subsample]
    /// The constant IV (`cbcs`) or the sample's IV (`cenc`).
    let iv: [UInt8]
    /// What the sample is, for an error: `video frame` or `audio frame`, and its 90 kHz presentation
    /// time.
    let kind: StaticString
    let pts: Int64

    /// Encrypts the sample in `buffer`; returns the reason on failure.
    func run(_ buffer: UnsafeMutableRawBufferPointer) -> String? {
        do {
            try cipher.process(
                UnsafeMutableRawBufferPointer(rebasing: buffer[range]), subsamples: subsamples, iv: iv)
            return nil
        } catch {
            return "cannot encrypt the \(kind) at \(FragmentedPackagingRun.seconds(pts)) s: \(error)"
        }
    }
}
