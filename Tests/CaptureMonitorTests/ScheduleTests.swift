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
        ("every:0", "positive number"),
        ("every:", "positive number"),
        ("every:-2", "positive number"),
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
