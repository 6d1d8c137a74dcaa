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

    @Test func aHangingTickDoesNotHangABoundedStop() {
        let release = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let thread = PeriodicThread(name: "test-hang", interval: 0.001) {
            entered.signal()
            release.wait()
        }
        entered.wait()
        thread.stop(waitingAtMost: 0.05)
        release.signal()
    }
}
