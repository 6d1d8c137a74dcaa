import Foundation
import Synchronization
import Testing
import ThreadSupport

@Suite struct PeriodicThreadTests {
    @Test func ticksUntilStoppedAndNeverAfter() {
        let ticks = Mutex(0)
        let thread = PeriodicThread(name: "test-ticker", interval: 0.005) { ticks.withLock { $0 += 1 } }
        let deadline = Date().addingTimeInterval(10)
        while ticks.withLock({ $0 }) < 3 && Date() < deadline { usleep(1000) }
        thread.stop()
        let stopped = ticks.withLock { $0 }
        #expect(stopped >= 3)
        usleep(50_000)
        #expect(ticks.withLock { $0 } == stopped, "a tick ran after stop returned")
    }

    @Test func tickSoonRunsTheNextTickWithoutWaitingForTheInterval() {
        let ticks = Mutex(0)
        let thread = PeriodicThread(name: "test-soon", interval: 3600) { ticks.withLock { $0 += 1 } }
        defer { thread.stop() }
        #expect(eventually { ticks.withLock { $0 } == 1 }, "the first tick did not run")
        thread.tickSoon()
        #expect(eventually { ticks.withLock { $0 } == 2 }, "tickSoon waited for the hour-long interval")
        thread.stop()
        thread.tickSoon()
        usleep(20_000)
        #expect(ticks.withLock { $0 } == 2, "a tick ran after stop")
    }

    @Test func startsOnlyOnceAndNotAfterStop() {
        let ticks = Mutex(0)
        let thread = PeriodicThread(name: "test-once", interval: 60)
        thread.start { ticks.withLock { $0 += 1 } }
        thread.start { ticks.withLock { $0 += 100 } }
        let deadline = Date().addingTimeInterval(10)
        while ticks.withLock({ $0 }) == 0 && Date() < deadline { usleep(1000) }
        thread.stop()
        #expect(ticks.withLock { $0 } == 1)
        let never = PeriodicThread(name: "test-never", interval: 0.001)
        never.stop()
        never.start { ticks.withLock { $0 += 1000 } }
        usleep(20_000)
        #expect(ticks.withLock { $0 } == 1)
    }

    /// A tick stuck in the kernel (a `/proc` read, a full disk) must not hang whoever stops the thread:
    /// `stop(waitingAtMost:)` returns while the tick is still blocked, and once the tick returns the
    /// thread ends without another.
    ///
    /// `stop` runs on a thread of its own and gets a generous 30 s to return; the time limit is only a
    /// last resort that keeps a hang from stalling the run (it also counts time spent waiting for a thread
    /// of the test pool, which blocking end-to-end tests can hold for most of a run, hence its size).
    @Test(.timeLimit(.minutes(60)))
    func aHangingTickDoesNotHangABoundedStop() {
        let release = DispatchSemaphore(value: 0)
        let entered = Mutex(0)
        let finished = Mutex(0)
        let thread = PeriodicThread(name: "test-hang", interval: 0.001) {
            entered.withLock { $0 += 1 }
            release.wait()
            finished.withLock { $0 += 1 }
        }
        #expect(eventually { entered.withLock { $0 } == 1 }, "the first tick never ran")
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            thread.stop(waitingAtMost: 0.05)
            stopped.signal()
        }.start()
        #expect(stopped.wait(timeout: .now() + 30) == .success, "stop waited for the blocked tick")
        // Nothing has released the tick yet: `stop` returned without waiting for it.
        #expect(finished.withLock { $0 } == 0)
        #expect(entered.withLock { $0 } == 1)
        release.signal()
        #expect(eventually { finished.withLock { $0 } == 1 }, "the released tick did not return")
        // Stopped while the tick ran: no tick after it, however long we look (100 intervals).
        usleep(100_000)
        #expect(entered.withLock { $0 } == 1, "a tick ran after stop")
    }
}

/// Polls `condition` every millisecond for up to 10 s; returns whether it came true.
private func eventually(_ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}
