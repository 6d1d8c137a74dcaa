import Dispatch
import FoundationEssentials
import Synchronization
import SystemSupport

/// A thread of its own that runs a tick every `interval` seconds until stopped; stopping wakes it at once.
///
/// Work that blocks (SQLite writes, `/proc` reads, socket sweeps) runs here, never on Swift's cooperative
/// pool. The detectors, the gateway's audit writer and lease sweeper, and the HTTP server's watchdog
/// each own one.
public final class PeriodicThread: Sendable {
    private enum Phase { case idle, running, stopped }

    /// The thread's name, as debuggers and `top -H` show it.
    public let name: String
    /// Seconds between ticks.
    public let interval: Double
    private let phase = Mutex(Phase.idle)
    private let wake = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)

    /// Creates a thread that has not started yet.
    public init(name: String, interval: Double) {
        self.name = name
        self.interval = interval
    }

    /// Creates the thread and starts it at once (see `start(firstTickAfter:_:)`).
    public convenience init(
        name: String, interval: Double, firstTickAfter delay: Double = 0, tick: @escaping @Sendable () -> Void
    ) {
        self.init(name: name, interval: interval)
        start(firstTickAfter: delay, tick)
    }

    /// Starts the thread: the first tick after `delay` seconds (at once by default), then one every
    /// `interval`. Starting twice, or after `stop`, does nothing.
    public func start(firstTickAfter delay: Double = 0, _ tick: @escaping @Sendable () -> Void) {
        let interval = interval
        startAdaptive(firstTickAfter: delay) {
            tick(); return interval
        }
    }

    /// Starts the thread with a tick that says how long to sleep before the next one (seconds), so a
    /// poller can slow down while it has nothing to do; `interval` is then only its nominal period.
    /// Starting twice, or after `stop`, does nothing.
    public func startAdaptive(firstTickAfter delay: Double = 0, _ tick: @escaping @Sendable () -> Double) {
        let starting = phase.withLock { phase in
            guard phase == .idle else { return false }
            phase = .running
            return true
        }
        guard starting else { return }
        // The thread holds `self` until it ends; `stop()` ends it.
        startThread(name: name) { [self] in
            if delay > 0 { _ = wake.wait(timeout: .now() + delay) }
            while phase.withLock({ $0 == .running }) {
                let pause = tick()
                _ = wake.wait(timeout: .now() + max(0, pause))
            }
            exited.signal()
        }
    }

    /// Runs the next tick now instead of at the end of the current pause (a tick running now finishes
    /// first; the next starts as soon as it does). Does nothing unless the thread is running.
    public func tickSoon() {
        guard phase.withLock({ $0 == .running }) else { return }
        wake.signal()
    }

    /// Asks the thread to stop and waits for its current tick to end: for ever when `timeout` is nil, or
    /// at most `timeout` seconds, leaving a tick that hangs behind rather than hanging the caller.
    public func stop(waitingAtMost timeout: Double? = nil) {
        let wasRunning = phase.withLock { phase in
            defer { phase = .stopped }
            return phase == .running
        }
        guard wasRunning else { return }
        wake.signal()
        if let timeout {
            _ = exited.wait(timeout: .now() + timeout)
        } else {
            exited.wait()
        }
    }
}
