import FoundationEssentials
import SystemSupport

/// A lock with a condition to wait on, around a value. All access to the value happens with the lock held.
final class Guarded<Value>: @unchecked Sendable {
    // Invariant: `value` is only read or written inside `withLock`/`wait`, under `condition`'s lock.
    private let condition = ConditionLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the lock held and wakes every waiter afterwards.
    @discardableResult
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return try body(&value)
    }

    /// Waits until `ready` holds (or `timeout` seconds pass), then runs `body` with the lock held.
    @discardableResult
    func wait<R>(until ready: (Value) -> Bool, timeout: Double? = nil, _ body: (inout Value) throws -> R) rethrows -> R
    {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        let deadline = timeout.map { monotonicSeconds() + $0 }
        while !ready(value) {
            if let deadline {
                if !condition.wait(untilMonotonic: deadline) { break }
            } else {
                condition.wait()
            }
        }
        return try body(&value)
    }
}

/// Moves a value that is not `Sendable` to another thread.
struct Transfer<Value>: @unchecked Sendable {
    // Invariant: the sender hands the value over and never touches it again; only the receiving thread
    // uses it from then on.
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}

/// A thread the player owns, with a stack big enough for FFmpeg and a way to wait for its end.
final class PlayerThread: Sendable {
    private let done = Guarded(false)

    /// Starts `body` on a new thread named `name`.
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        let done = self.done
        startThread(name: name, stackSize: 8 << 20) {
            body()
            done.withLock { $0 = true }
        }
    }

    /// Blocks until the thread's body has returned.
    func join() {
        done.wait(until: { $0 }) { _ in }
    }
}
