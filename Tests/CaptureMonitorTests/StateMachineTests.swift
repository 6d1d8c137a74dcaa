import CaptureMonitor
import Foundation
import Synchronization
import Testing

private func at(_ media: Double, wall: Double = 0) -> CaptureTime { CaptureTime(media: media, wall: wall) }

@Suite struct CaptureStateMachineTests {
    @Test func noSourcesIsClear() {
        var machine = CaptureStateMachine()
        let events = machine.handle(.advance(to: at(0)))
        #expect(events.map(\.state) == [.clear])
        #expect(events.first?.source == "none")
        #expect(machine.handle(.advance(to: at(5))).isEmpty)
    }

    @Test func scheduleProducesOneEventPerChangeWithItsTime() throws {
        var machine = CaptureStateMachine(scheduled: [try SimulatedSchedule(parsing: "2-5")])
        var events: [CaptureEvent] = []
        for step in 0...70 { events += machine.handle(.advance(to: at(Double(step) * 0.1))) }
        #expect(events.map(\.state) == [.clear, .capturing, .clear])
        #expect(events.map(\.source) == ["simulated", "simulated", "simulated"])
        #expect(abs(events[1].since.media - 2) < 1e-9)
        #expect(abs(events[2].since.media - 5) < 1e-9)
    }

    @Test func anyCapturingWinsOverClearAndUnknown() {
        var machine = CaptureStateMachine()
        _ = machine.handle(.report(CaptureReport(source: "a", state: .clear, reason: "quiet"), at: at(0)))
        _ = machine.handle(.report(CaptureReport(source: "b", state: .unknown, reason: "cannot tell"), at: at(0)))
        #expect(machine.current?.state == .unknown)
        let events = machine.handle(
            .report(
                CaptureReport(source: "c", state: .capturing, reason: "obs", pid: 42, app: "obs", confidence: 0.9),
                at: at(1)))
        #expect(events.count == 1)
        #expect(events.first?.state == .capturing)
        #expect(events.first?.pid == 42 && events.first?.app == "obs" && events.first?.confidence == 0.9)
        #expect(events.first?.source == "c")
    }

    @Test func aLapsedWallLeaseTurnsUnknownAndRenewalClearsIt() {
        var machine = CaptureStateMachine()
        let report = CaptureReport(source: "remote:x", state: .clear, reason: "client", lease: .wall(10))
        #expect(machine.handle(.report(report, at: at(0, wall: 5))).map(\.state) == [.clear])
        #expect(machine.handle(.advance(to: at(1, wall: 9.9))).isEmpty)
        let lapsed = machine.handle(.advance(to: at(1, wall: 10)))
        #expect(lapsed.map(\.state) == [.unknown])
        #expect(lapsed.first?.reason.contains("lease lapsed") == true)
        var renewed = report
        renewed.lease = .wall(20)
        #expect(machine.handle(.report(renewed, at: at(1, wall: 11))).map(\.state) == [.clear])
    }

    @Test func capturingStillWinsOverALapsedLease() {
        var machine = CaptureStateMachine()
        _ = machine.handle(
            .report(CaptureReport(source: "a", state: .clear, reason: "x", lease: .wall(1)), at: at(0)))
        _ = machine.handle(.report(CaptureReport(source: "b", state: .capturing, reason: "y"), at: at(0)))
        #expect(machine.handle(.advance(to: at(0, wall: 2))).isEmpty)
        #expect(machine.current?.state == .capturing)
    }

    @Test func withdrawingTheLastSourceReturnsToClear() {
        var machine = CaptureStateMachine()
        _ = machine.handle(.report(CaptureReport(source: "m", state: .capturing, reason: "r"), at: at(0)))
        #expect(machine.handle(.withdraw(source: "m", at: at(1))).map(\.state) == [.clear])
    }

    @Test func heartbeatStallIsFailClosedInMediaTime() {
        var machine = CaptureStateMachine(scheduled: [StalledHeartbeat(stallAt: 4, lease: 1, period: 0.5)])
        var events: [CaptureEvent] = []
        var time = 0.0
        while time < 8 {
            events += machine.handle(.advance(to: at(time)))
            time = machine.nextChange(afterMedia: time) ?? 8
        }
        #expect(events.map(\.state) == [.clear, .unknown])
        #expect(events.last?.since.media == 5)
        #expect(events.last?.source == "heartbeat")
    }

    @Test func unknownProtectsUnlessAllowed() {
        let event = CaptureEvent(state: .unknown, source: "s", reason: "r", since: at(0))
        #expect(event.isProtecting(under: .protect))
        #expect(!event.isProtecting(under: .allow))
        let capturing = CaptureEvent(state: .capturing, source: "s", reason: "r", since: at(0))
        #expect(capturing.isProtecting(under: .allow))
        let clear = CaptureEvent(state: .clear, source: "s", reason: "r", since: at(0))
        #expect(!clear.isProtecting(under: .protect))
    }

    @Test func nextChangeIncludesMediaLeaseDeadlinesOfLiveReports() {
        var machine = CaptureStateMachine()
        _ = machine.handle(
            .report(CaptureReport(source: "s", state: .clear, reason: "r", lease: .media(7)), at: at(0)))
        #expect(machine.nextChange(afterMedia: 1) == 7)
        #expect(machine.nextChange(afterMedia: 7) == nil)
    }
}

/// A wall clock tests move by hand.
final class FakeClock: Sendable {
    private let value = Mutex(0.0)
    var seconds: Double {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
    func set(_ seconds: Double) { value.withLock { $0 = seconds } }
}

@Suite struct CaptureMonitorTests {
    @Test func remoteSourceAppliesNewerSequencesAndLapsesWithoutRenewal() {
        let clock = FakeClock()
        let monitor = CaptureMonitor(policy: .protect, wallClock: { clock.seconds })
        let seen = Mutex<[CaptureState]>([])
        monitor.addListener { event in seen.withLock { $0.append(event.state) } }
        let remote = RemoteCaptureSource(client: "phone")
        #expect(remote.receive(.clear, sequence: 1, lease: 2) == .detached)
        monitor.attach(remote)
        #expect(remote.receive(.capturing, sequence: 1, lease: 2) == .accepted)
        #expect(monitor.current.state == .capturing)
        #expect(monitor.current.source == "remote:phone")
        #expect(remote.receive(.clear, sequence: 1, lease: 2) == .stale(lastSequence: 1))
        #expect(monitor.current.state == .capturing)
        #expect(remote.receive(.clear, sequence: 2, lease: 2) == .accepted)
        #expect(monitor.isProtecting == false)
        clock.set(1.9)
        monitor.advance(toMedia: 1)
        #expect(monitor.current.state == .clear)
        clock.set(2.1)
        monitor.advance(toMedia: 1.1)
        #expect(monitor.current.state == .unknown)
        #expect(monitor.isProtecting)
        #expect(seen.withLock { $0 } == [.capturing, .clear, .unknown])
        #expect(monitor.history.map(\.state) == [.capturing, .clear, .unknown])
    }

    /// Many clients' PUTs at once (as the control API's connection threads make them): reports must reach
    /// the monitor in sequence order, so the state left in force is the newest report's, never an older
    /// `clear` that lost the race after a newer `capturing` was applied.
    @Test func concurrentRemoteReportsEndInTheNewestOne() {
        let reports = 1_000
        for round in 0..<3 {
            let monitor = CaptureMonitor(policy: .protect, wallClock: { 0 })
            let remote = RemoteCaptureSource(client: "race")
            let delivered = Mutex<[Int]>([])
            // The monitor's own reporter, with a random delay where a preempted thread could be, between the
            // source's sequence check and the monitor taking the report: a busy wait of up to a few
            // microseconds (a sleep would take milliseconds on a loaded machine, 3000 times over).
            let spin = Atomic(0)
            remote.start(
                CaptureReporter(source: remote.name, wallClock: { 0 }) { report in
                    for _ in 0..<Int.random(in: 0...2_000) { spin.add(1, ordering: .relaxed) }
                    guard let report else { return }
                    delivered.withLock { $0.append(Int(report.reason)!) }
                    monitor.submit(report)
                })
            let next = Mutex(0)
            let group = DispatchGroup()
            for _ in 0..<8 {
                group.enter()
                Thread {
                    while true {
                        let sequence = next.withLock { value -> Int in
                            value += 1
                            return value
                        }
                        guard sequence <= reports else { break }
                        // Odd sequences say clear, even ones capturing; the last (even) one is capturing.
                        _ = remote.receive(
                            sequence % 2 == 0 ? .capturing : .clear, sequence: UInt64(sequence), lease: 60,
                            reason: "\(sequence)")
                    }
                    group.leave()
                }.start()
            }
            // A generous deadline rather than a time limit: a limit also counts time spent waiting for one
            // of the test pool's threads, which blocking end-to-end tests hold for minutes.
            guard group.wait(timeout: .now() + 60) == .success else {
                Issue.record("round \(round): the reports did not finish within 60 s (a deadlock?)")
                return
            }
            let order = delivered.withLock { $0 }
            #expect(order.last == reports, "round \(round): the newest report was not the last applied")
            #expect(zip(order, order.dropFirst()).allSatisfy { $0 < $1 }, "round \(round): applied out of order")
            #expect(monitor.current.state == .capturing, "round \(round): \(monitor.current)")
            // The state announced last is that of the first report of the last run of capturing (even)
            // reports applied: a report that changes nothing is not announced. Where a clear report lost the
            // race (came after a newer one, so was refused as stale), that run starts before the last report.
            let runStart = order.reversed().prefix { $0 % 2 == 0 }.last
            #expect(monitor.current.reason == runStart.map { "\($0)" }, "round \(round): \(order.suffix(4))")
        }
    }

    @Test func allowPolicyDoesNotProtectUnknown() {
        let clock = FakeClock()
        let monitor = CaptureMonitor(policy: .allow, wallClock: { clock.seconds })
        monitor.submit(CaptureReport(source: "d", state: .unknown, reason: "detector cannot tell"))
        #expect(monitor.current.state == .unknown)
        #expect(!monitor.isProtecting)
    }

    @Test func manualSwitchTogglesCapturing() {
        let monitor = CaptureMonitor(wallClock: { 0 })
        let manual = ManualCaptureSource()
        monitor.attach(manual)
        monitor.advance(toMedia: 0)
        #expect(monitor.current.state == .clear)
        #expect(manual.toggle())
        #expect(monitor.current.state == .capturing)
        #expect(!manual.toggle())
        #expect(monitor.current.state == .clear)
        monitor.detach(source: manual.name)
        #expect(manual.toggle())
        #expect(monitor.current.state == .clear)
    }

    @Test func decisionEvaluatesScheduledSourcesAtAnyMediaTimeWithoutAnnouncing() throws {
        let monitor = CaptureMonitor(scheduled: [try SimulatedSchedule(parsing: "2-5")], wallClock: { 0 })
        monitor.advance(toMedia: 0)
        #expect(monitor.decision(atMedia: 3).state == .capturing)
        #expect(monitor.current.state == .clear)
        #expect(monitor.history.count == 1)
        #expect(monitor.nextChange(afterMedia: 0) == 2)
    }
}
