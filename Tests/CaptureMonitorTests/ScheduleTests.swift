import CaptureMonitor
import Testing

@Suite struct SimulatedScheduleTests {
    @Test func bareSpecRecordsTheWholePlayback() throws {
        let schedule = try SimulatedSchedule(parsing: "")
        for time in [0.0, 0.5, 100, 10_000] { #expect(schedule.isRecording(at: time)) }
        #expect(schedule.nextChange(after: 0) == nil)
    }

    @Test func intervalsRecordInsideAndNotOutside() throws {
        let schedule = try SimulatedSchedule(parsing: "2-5,8-")
        let expected: [(Double, Bool)] = [
            (0, false), (1.999, false), (2, true), (4.999, true), (5, false), (7.9, false), (8, true), (99, true),
        ]
        for (time, recording) in expected { #expect(schedule.isRecording(at: time) == recording, "at \(time)") }
        #expect(schedule.nextChange(after: 0) == 2)
        #expect(schedule.nextChange(after: 2) == 5)
        #expect(schedule.nextChange(after: 5) == 8)
        #expect(schedule.nextChange(after: 8) == nil)
        #expect(schedule.report(at: 3).state == .capturing)
        #expect(schedule.report(at: 6).state == .clear)
    }

    @Test func everyTogglesStartingClear() throws {
        let schedule = try SimulatedSchedule(parsing: "every:3")
        #expect(!schedule.isRecording(at: 0))
        #expect(!schedule.isRecording(at: 2.99))
        #expect(schedule.isRecording(at: 3))
        #expect(schedule.isRecording(at: 5.99))
        #expect(!schedule.isRecording(at: 6))
        #expect(schedule.isRecording(at: 9.5))
        #expect(schedule.nextChange(after: 0) == 3)
        #expect(schedule.nextChange(after: 3) == 6)
        #expect(schedule.nextChange(after: 4.5) == 6)
    }

    @Test(arguments: [
        ("5-2", "ends before it starts"),
        ("abc", "is not an interval"),
        ("2-5,,8-", "empty interval"),
        ("-3", "is not a number"),
        ("1-x", "'x' in '1-x' is not a number"),
        ("every:0", "a period from 0.01 to 1e9 seconds, not '0'"),
        ("every:", "a period from 0.01 to 1e9 seconds, not ''"),
        ("every:-2", "a period from 0.01 to 1e9 seconds"),
        // A period this short would switch every few samples, or never let media time move on (1e-300).
        ("every:1e-300", "a period from 0.01 to 1e9 seconds, not '1e-300'"),
        ("every:1e-9", "a period from 0.01 to 1e9 seconds"),
        ("every:0.009", "a period from 0.01 to 1e9 seconds"),
        ("every:1e10", "a period from 0.01 to 1e9 seconds"),
        ("every:inf", "a period from 0.01 to 1e9 seconds"),
        ("0-10000000000", "'10000000000' in '0-10000000000' is more than 1e9 seconds"),
        ("2000000000-", "'2000000000' in '2000000000-' is more than 1e9 seconds"),
        ("0-1e300", "is not a number"),
        ("4-6,1-2", "overlaps or precedes"),
        ("3-,5-6", "must come last"),
        ("1-2-3", "is not an interval"),
        ("nan-4", "is not a number"),
    ])
    func malformedSpecsAreRejectedWithAReason(spec: String, problem: String) {
        #expect {
            try SimulatedSchedule(parsing: spec)
        } throws: { error in
            guard let error = error as? ScheduleError else { return false }
            return error.spec == spec && error.problem.contains(problem)
        }
    }

    @Test func boundarySpecsAreAccepted() throws {
        #expect(try SimulatedSchedule(parsing: "every:0.01").pattern == .every(period: 0.01))
        #expect(try SimulatedSchedule(parsing: "every:1e9").pattern == .every(period: 1e9))
        let widest = try SimulatedSchedule(parsing: "0-1000000000")
        #expect(widest.pattern == .intervals([SimulatedSchedule.Interval(start: 0, end: 1e9)]))
        #expect(try StalledHeartbeat(parsing: "1000000000").stallAt == 1e9)
        #expect(throws: ScheduleError.self) { try StalledHeartbeat(parsing: "1e12") }
        #expect(throws: ScheduleError.self) { try StalledHeartbeat(parsing: "inf") }
    }

    /// Media times come from containers and can be anything; a caller stepping from change to change must
    /// always move on, and no evaluation may trap.
    @Test(arguments: [0.01, 0.37, 3, 1e9])
    func everyStepsStrictlyForwardAtAnyMediaTime(period: Double) throws {
        let schedule = try SimulatedSchedule(parsing: "every:\(period)")
        for time in [-5, 0, 0.01, 2.5, 1e9, 1e13, 1e15, 9.2e18, 1e300, Double.greatestFiniteMagnitude] {
            let next = try #require(schedule.nextChange(after: time))
            #expect(next > time, "every:\(period) after \(time) gave \(next)")
            _ = schedule.isRecording(at: time)
            _ = schedule.report(at: next)
        }
        // Where the arithmetic is exact the answers are the period's multiples.
        #expect(schedule.nextChange(after: 0) == period)
        #expect(schedule.nextChange(after: period) == 2 * period)
        #expect(schedule.isRecording(at: period * 1.5))
        #expect(!schedule.isRecording(at: period * 2.5))
    }

    @Test func heartbeatStepsStrictlyForward() {
        let heartbeat = StalledHeartbeat(stallAt: 1e9)
        for time in [-1, 0, 0.5, 1e9 - 0.5, 1e9, 1e9 + 0.5, 1e15, 1e300] {
            if let next = heartbeat.nextChange(after: time) { #expect(next > time, "after \(time) gave \(next)") }
        }
        #expect(heartbeat.nextChange(after: 1e9 + 1) == nil)
    }

    @Test func theMachineIgnoresAChangeThatIsNotLater() throws {
        /// A source that breaks the contract: its "next" change is the time asked about.
        struct Stuck: ScheduledCaptureSource {
            let name = "stuck"
            func report(at time: Double) -> CaptureReport { CaptureReport(source: name, state: .clear, reason: "") }
            func nextChange(after time: Double) -> Double? { time }
        }
        let machine = CaptureStateMachine(scheduled: [Stuck(), try SimulatedSchedule(parsing: "4-5")])
        #expect(machine.nextChange(afterMedia: 1) == 4)
        #expect(machine.nextChange(afterMedia: 5) == nil)
    }

    @Test func stalledHeartbeatRenewsUntilTheStallAndThenLapses() {
        let heartbeat = StalledHeartbeat(stallAt: 3, lease: 1, period: 0.5)
        #expect(heartbeat.report(at: 0.2).lease == .media(1))
        #expect(heartbeat.report(at: 2.7).lease == .media(3.5))
        // The last renewal is at 3, so nothing renews after the stall and the lease ends at 4.
        #expect(heartbeat.report(at: 3.2).lease == .media(4))
        #expect(heartbeat.report(at: 9).lease == .media(4))
        #expect(heartbeat.nextChange(after: 2.9) == 3)
        #expect(heartbeat.nextChange(after: 3) == 4)
        #expect(heartbeat.nextChange(after: 4) == nil)
        #expect(StalledHeartbeat(stallAt: 3.2).report(at: 5).lease == .media(4))
        #expect(throws: ScheduleError.self) { try StalledHeartbeat(parsing: "soon") }
        #expect(throws: ScheduleError.self) { try StalledHeartbeat(parsing: "-1") }
    }
}
