import CaptureMonitor
import Foundation
import ProcessTestSupport
import Synchronization
import Testing

@testable import CaptureDetectors

@Suite struct NewProcessWatchTests {
    @Test func readsTheNewestPIDFromARecordedLoadAverage() {
        #expect(ProcessTable.newestPID(inLoadAverage: "2.79 2.90 2.37 5/148 28664\n") == 28664)
        #expect(ProcessTable.newestPID(inLoadAverage: "2.79 2.90 2.37 5/148\n") == nil)
        #expect(ProcessTable.newestPID(inLoadAverage: "2.79 2.90 2.37 5-148 28664\n") == nil)
        #expect(ProcessTable.newestPID(inLoadAverage: "") == nil)
        #expect(ProcessTable().newestPID() != nil, "this machine's /proc/loadavg")
    }

    @Test(arguments: [
        "2.79 2.90 2.37 5/148 28664\n", "2.79 2.90 2.37 5/148\n", "2.79 2.90 2.37 5-148 28664\n", "", "\n",
        "0.00 0.00 0.00 1/1 99999999999\n", "0.00 0.00 0.00 1/1 0\n",
    ])
    func theByteParserAgreesWithTheTextParser(_ line: String) {
        let bytes = Array(line.utf8)
        let fromBytes = bytes.withUnsafeBufferPointer { ProcessTable.newestPID(inLoadAverage: $0) }
        #expect(fromBytes == ProcessTable.newestPID(inLoadAverage: line))
    }

    @Test func theKeptOpenReaderReadsAFreshValueEachTime() throws {
        let reader = LoadAverageReader(table: ProcessTable())
        let before = try #require(reader.newestPID())
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let after = try #require(reader.newestPID())
        #expect(after != before, "a process was created in between")
        #expect(abs(Int(after) - Int(ProcessTable().newestPID() ?? 0)) < 1000)
    }

    @Test func theFirstReadingIsABaselineAndNewPIDsAreChecked() {
        var watch = NewProcessWatch(window: 0.25)
        #expect(watch.observe(newest: 1000, at: 0) == .nothing)
        #expect(watch.observe(newest: 1000, at: 0.005) == .nothing)
        #expect(watch.observe(newest: 1003, at: 0.010) == .check([1001, 1002, 1003]))
    }

    @Test func aNewPIDIsCheckedAgainUntilTheWindowEnds() {
        // A shell forks (the new PID is still `sh`) and execs the recorder later: look again each time.
        var watch = NewProcessWatch(window: 0.25)
        _ = watch.observe(newest: 500, at: 0)
        #expect(watch.observe(newest: 501, at: 0.01) == .check([501]))
        #expect(watch.observe(newest: 501, at: 0.10) == .check([501]))
        #expect(watch.observe(newest: 502, at: 0.20) == .check([501, 502]))
        #expect(watch.observe(newest: 502, at: 0.30) == .check([502]))
        #expect(watch.observe(newest: 502, at: 0.50) == .nothing)
    }

    @Test func aJumpOrAWrapAsksForAFullScan() {
        var watch = NewProcessWatch(window: 0.25, maxGap: 64)
        _ = watch.observe(newest: 500, at: 0)
        #expect(watch.observe(newest: 700, at: 0.01) == .scanAll)
        #expect(watch.observe(newest: 701, at: 0.02) == .check([701]))
        // pid_max reached: the counter starts again from the bottom.
        #expect(watch.observe(newest: 300, at: 0.03) == .scanAll)
        #expect(watch.observe(newest: 300, at: 0.04) == .nothing)
    }

    @Test func onlyTheNewestRecentTasksAreKept() {
        var watch = NewProcessWatch(window: 10, maxGap: 64, maxRecent: 4)
        _ = watch.observe(newest: 100, at: 0)
        #expect(watch.observe(newest: 103, at: 0.01) == .check([101, 102, 103]))
        #expect(watch.observe(newest: 106, at: 0.02) == .check([103, 104, 105, 106]))
    }

    @Test func anUnreadableLoadAverageKeepsTheRecentOnesAndAddsNothing() {
        var watch = NewProcessWatch(window: 0.25)
        _ = watch.observe(newest: 10, at: 0)
        _ = watch.observe(newest: 11, at: 0.01)
        #expect(watch.observe(newest: nil, at: 0.02) == .check([11]))
        #expect(watch.observe(newest: 11, at: 0.03) == .check([11]))
    }
}

@Suite struct NewTaskClassifyTests {
    /// A fake procfs with one task whose files the test rewrites as a fork, an exec seen half done and
    /// a finished exec would change them.
    @Test func aRecheckedTaskIsClassifiedAgainOnlyOnceItsNameOrCommandLineIsNew() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("fakeproc-\(UUID().uuidString)")
        let task = root.appendingPathComponent("4321")
        try FileManager.default.createDirectory(at: task, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        func write(comm: String, cmdline: [String]) throws {
            try Data((comm + "\n").utf8).write(to: task.appendingPathComponent("comm"))
            try Data(cmdline.map { $0 + "\u{0}" }.joined().utf8).write(to: task.appendingPathComponent("cmdline"))
        }
        try Data("Name:\tx\nTgid:\t4321\n".utf8).write(to: task.appendingPathComponent("status"))
        try Data("0.00 0.00 0.00 1/100 4321\n".utf8).write(to: root.appendingPathComponent("loadavg"))
        let check = ProcessScanSource.NewTaskCheck(
            table: ProcessTable(root: root.path), classifier: ProcessClassifier())

        // The shell that forked: not a recorder, and looked at whole once.
        try write(comm: "sh", cmdline: ["/bin/sh", "-c", "ffmpeg -f x11grab -i :0 out.mkv"])
        #expect(check.classify([4321]).isEmpty)
        #expect(check.classify([4321]).isEmpty)
        // Mid-exec: the new name, no command line yet; then the command line: now it is a recorder.
        try write(comm: "ffmpeg", cmdline: [])
        #expect(check.classify([4321]).isEmpty)
        try write(comm: "ffmpeg", cmdline: ["ffmpeg", "-f", "x11grab", "-i", ":0", "out.mkv"])
        let found = check.classify([4321])
        #expect(found.map(\.pid) == [4321] && found.first?.app == "ffmpeg", "\(found)")
    }
}

@Suite(.serialized) struct QuickProcessScanTests {
    /// While nothing new is created the newest PID is read at the idle interval (here 100 ms); once a task
    /// appears it is read every 10 ms for the exec window (50 ms), then the reading slows down again. The
    /// readings are counted through the check's own `newestPID` closure, with no regular scan in the way.
    @Test func theNewestPIDIsReadFastOnlyWhileANewTaskIsYoung() throws {
        let newest = Mutex<Int32>(1000)
        let readings = Mutex<[Double]>([])
        let check = ProcessScanSource.NewTaskCheck(
            interval: 0.1,
            newestPID: {
                readings.withLock { $0.append(MonotonicClock.seconds()) }
                return newest.withLock { $0 }
            }, classify: { _ in [] })
        let monitor = CaptureMonitor()
        monitor.attach(ProcessScanSource(interval: 10, lease: 30, newTasks: check) { [] })
        defer { monitor.stopAll() }
        func count(from start: Double, for seconds: Double) -> Int {
            readings.withLock { $0.filter { $0 >= start && $0 < start + seconds }.count }
        }
        // Idle: about 10 readings a second (a fixed 10 ms poll would make 100).
        let idleStart = MonotonicClock.seconds()
        Thread.sleep(forTimeInterval: 1.2)
        let idle = count(from: idleStart + 0.1, for: 1)
        #expect(idle >= 3 && idle <= 15, "\(idle) readings in an idle second")
        // A new task: the next reading sees it, and the ones after it come every 10 ms for its window.
        newest.withLock { $0 += 1 }
        let bumped = MonotonicClock.seconds()
        Thread.sleep(forTimeInterval: 0.5)
        let fast = count(from: bumped, for: 0.2)
        #expect(fast >= 5, "\(fast) readings in the 200 ms after a new task (at 100 ms: 2 at most)")
        let after = count(from: bumped + 0.25, for: 0.25)
        #expect(after <= 4, "\(after) readings in 250 ms once the task is no longer young")
    }

    /// A recorder started long before the next regular scan (10 s away) is seen through the newest PID,
    /// within a few quick readings; it is reported with its own PID.
    @Test func aNewRecorderIsSeenBetweenScans() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("quick-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Only this test's stand-in counts: the one with this folder on its command line.
        let ignored = RecorderRules.builtIn.rules.map { "ignore \($0.name)" }
        let rules = try RecorderRules.builtIn.applying(
            config: (ignored + ["screen ffmpeg when-arg \(directory.path)"]).joined(separator: "\n"))
        let classifier = ProcessClassifier(rules: rules)
        let table = ProcessTable()
        let monitor = CaptureMonitor()
        monitor.attach(
            ProcessScanSource(
                interval: 10, lease: 30, newTasks: .init(interval: 0.01, table: table, classifier: classifier)
            ) { table.snapshot().compactMap(classifier.classify) })
        defer { monitor.stopAll() }
        #expect(monitor.decision(atMedia: 0).state == .clear)

        let started = MonotonicClock.seconds()
        let recorder = try standIn("ffmpeg", ["-f", "x11grab", "-i", ":0", directory.path], in: directory)
        defer { end(recorder) }
        #expect(eventually(timeout: 5) { monitor.decision(atMedia: 0).state == .capturing })
        let seen = MonotonicClock.seconds() - started
        let decision = monitor.decision(atMedia: 0)
        #expect(decision.pid == recorder.processIdentifier && decision.app == "ffmpeg", "\(decision)")
        #expect(seen < 1, "seen after \(Int(seen * 1000)) ms: the quick check did not fire")
        print("quick process check: a new recorder seen \(Int(seen * 1000)) ms after it was started")
    }
}
