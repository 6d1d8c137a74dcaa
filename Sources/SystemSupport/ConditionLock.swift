import Glibc

/// A mutex with a condition variable on the monotonic clock (`pthread_mutex_t`, `pthread_cond_t`):
/// Foundation's `NSCondition`, without Foundation. Callers pair `lock` and `unlock` themselves.
public final class ConditionLock: @unchecked Sendable {
    // Invariant: the mutex and condition live in memory of their own that never moves, and are used only
    // through pthread calls, which are thread-safe.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Wakes every waiter.
    public func broadcast() { pthread_cond_broadcast(condition) }
    /// Wakes one waiter.
    public func signal() { pthread_cond_signal(condition) }
    /// Waits (lock held) until woken.
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits (lock held) until woken or until `deadline` (a `monotonicSeconds()` reading) passes; false
    /// when the deadline passed.
    public func wait(untilMonotonic deadline: Double) -> Bool {
        let seconds = deadline.rounded(.down)
        var time = timespec(tv_sec: Int(seconds), tv_nsec: Int((deadline - seconds) * 1e9))
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    /// Runs `body` with the lock held.
    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// Seconds on the monotonic clock (`clock_gettime(CLOCK_MONOTONIC)`).
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
