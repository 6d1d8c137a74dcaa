import CFFmpeg
import Synchronization

/// A flag that makes a demuxer's waits give up: FFmpeg polls it (`AVIOInterruptCB`) between attempts
/// while it waits for data, such as a live HLS playlist's next reload or a network read, and the read
/// then fails with `AVERROR_EXIT`. A `read(2)` blocked in the kernel (a FIFO with no writer) is not
/// interrupted. Set from any thread.
public final class InputInterruption: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    /// Makes the current and every later blocking read of the input return at once.
    public func interrupt() { flag.store(true, ordering: .releasing) }

    /// True once `interrupt()` was called.
    public var isInterrupted: Bool { flag.load(ordering: .acquiring) }

    /// The callback for `AVFormatContext.interrupt_callback`; the context must not outlive `self`.
    var callback: AVIOInterruptCB {
        AVIOInterruptCB(callback: inputInterruptionRequested, opaque: Unmanaged.passUnretained(self).toOpaque())
    }
}

/// FFmpeg's interrupt callback: nonzero when the `InputInterruption` behind `opaque` was interrupted.
/// A free function, so FFmpeg can call it from whichever thread reads.
private func inputInterruptionRequested(_ opaque: UnsafeMutableRawPointer?) -> Int32 {
    guard let opaque else { return 0 }
    return Unmanaged<InputInterruption>.fromOpaque(opaque).takeUnretainedValue().isInterrupted ? 1 : 0
}
