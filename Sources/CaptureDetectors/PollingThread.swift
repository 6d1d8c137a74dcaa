import Foundation
import Synchronization

/// A thread that calls `tick` every `interval` seconds until stopped; stopping wakes it at once.
///
/// Detectors poll on their own thread, never on the cooperative pool: a scan can block (a `/proc` read
/// of a process stuck in the kernel), and a blocked detector must only cost its own lease.
final class PollingThread: Sendable {
    private let stopped = Mutex(false)
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts a thread named `name` that runs `tick` every `interval` seconds, the first time at once or,
    /// when `waitFirst`, after one interval (the caller ran the first tick itself).
    init(name: String, interval: Double, waitFirst: Bool = false, tick: @escaping @Sendable () -> Void) {
        // The thread holds the poller until it ends; `stop()` ends it.
        let thread = Thread { [self] in
            if waitFirst { _ = wake.wait(timeout: .now() + interval) }
            while !stopped.withLock({ $0 }) {
                tick()
                _ = wake.wait(timeout: .now() + interval)
            }
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Asks the thread to stop and waits up to `timeout` seconds for its current tick to end; a tick
    /// that hangs is left behind rather than hanging the caller.
    func stop(timeout: Double = 1) {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        wake.signal()
        _ = finished.wait(timeout: .now() + timeout)
    }
}
