import Foundation
import Synchronization

/// A thread the gateway owns that runs a tick every `interval` seconds until stopped.
/// Used for work that must never run on Swift's cooperative pool (SQLite writes, lease sweeps).
final class PeriodicThread: Sendable {
    private let name: String
    private let interval: TimeInterval
    private let running = Mutex(false)
    private let wake = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)

    init(name: String, interval: TimeInterval) {
        self.name = name
        self.interval = interval
    }

    /// Starts the thread running `tick`.
    func start(_ tick: @escaping @Sendable () -> Void) {
        running.withLock { $0 = true }
        let thread = Thread { [self] in
            while running.withLock({ $0 }) {
                _ = wake.wait(timeout: .now() + interval)
                tick()
            }
            exited.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Stops the thread after its current tick; does nothing if it never started.
    func stop() {
        let wasRunning = running.withLock { running in
            defer { running = false }
            return running
        }
        guard wasRunning else { return }
        wake.signal()
        exited.wait()
    }
}
