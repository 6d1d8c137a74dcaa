import Foundation
import ProcessTestSupport
import Testing

@testable import CaptureDetectors

/// A procfs of plain files in a temporary folder: each task a folder with `comm`, `cmdline` and
/// `status`, rewritten in place as a fork, an exec or a rename would change them.
private struct FakeProc {
    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("fakeproc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    func write(_ pid: Int32, comm: String, cmdline: [String], tgid: Int32? = nil) throws {
        let task = root.appendingPathComponent("\(pid)")
        try FileManager.default.createDirectory(at: task, withIntermediateDirectories: true)
        try Data((comm + "\n").utf8).write(to: task.appendingPathComponent("comm"))
        try Data(cmdline.map { $0 + "\u{0}" }.joined().utf8).write(to: task.appendingPathComponent("cmdline"))
        try Data("Name:\t\(comm)\nTgid:\t\(tgid ?? pid)\n".utf8).write(to: task.appendingPathComponent("status"))
    }

    func remove(_ pid: Int32) throws {
        try FileManager.default.removeItem(at: root.appendingPathComponent("\(pid)"))
    }

    var table: ProcessTable { ProcessTable(root: root.path) }

    /// What the scan did before `ProcessScanner`: every process read whole and classified.
    func wholeScan(_ classifier: ProcessClassifier = ProcessClassifier()) -> [ProcessDetection] {
        table.snapshot().compactMap(classifier.classify)
    }

    func cleanUp() { try? FileManager.default.removeItem(at: root) }
}

@Suite struct ProcessScannerTests {
    /// The scan keeps a process's last verdict only while its `comm` and command line are byte for byte
    /// the same: a process that execs a recorder late, renames itself to one, or rewrites its command line
    /// into one is found by the next scan, as by the scan that read everything afresh.
    @Test func aChangedProcessIsClassifiedAgainAtTheNextScan() throws {
        let proc = try FakeProc()
        defer { proc.cleanUp() }
        try proc.write(100, comm: "bash", cmdline: ["/bin/bash"])
        try proc.write(101, comm: "sleep", cmdline: ["sleep", "30"])
        let scanner = ProcessScanner(table: proc.table, classifier: ProcessClassifier())
        #expect(scanner.scan().isEmpty)
        #expect(scanner.scan().isEmpty)

        // A late exec: same PID, new name and command line.
        try proc.write(101, comm: "ffmpeg", cmdline: ["ffmpeg", "-f", "x11grab", "-i", ":0", "o.mkv"])
        #expect(scanner.scan().map(\.pid) == [101])
        #expect(scanner.scan() == proc.wholeScan())
        // It stops grabbing (an exec of the same name, other arguments): clear again.
        try proc.write(101, comm: "ffmpeg", cmdline: ["ffmpeg", "-i", "a.mp4", "b.mkv"])
        #expect(scanner.scan().isEmpty)
        // Renamed: the command line is unchanged, only `comm` says obs.
        try proc.write(100, comm: "obs", cmdline: ["/bin/bash"])
        #expect(scanner.scan().map(\.app) == ["obs"])
        // The command line rewritten in place (setproctitle) under an unchanged name.
        try proc.write(100, comm: "bash", cmdline: ["/bin/bash"])
        #expect(scanner.scan().isEmpty)
        try proc.write(100, comm: "bash", cmdline: ["/usr/bin/kazam"])
        #expect(scanner.scan().map(\.app) == ["kazam"])
        // Gone, and a new process under the same PID.
        try proc.remove(100)
        #expect(scanner.scan().isEmpty)
        try proc.write(100, comm: "parec", cmdline: ["parec", "-d", "x.monitor"])
        #expect(scanner.scan().map(\.app) == ["parec"])
        #expect(scanner.scan() == proc.wholeScan())
        #expect(scanner.scan(skipping: 100).isEmpty)
    }

    /// A command line longer than the buffer on the stack is read on to the end, so an argument past it
    /// still counts; an empty one (a kernel thread, a zombie) is no process.
    @Test func aLongCommandLineIsReadWholeAndAnEmptyOneIsNoProcess() throws {
        let proc = try FakeProc()
        defer { proc.cleanUp() }
        let filler = Array(repeating: "-loglevel" + String(repeating: "v", count: 90), count: 100)
        try proc.write(200, comm: "ffmpeg", cmdline: ["ffmpeg"] + filler + ["-f", "x11grab", "-i", ":0", "o.mkv"])
        try proc.write(201, comm: "kworker/0:1", cmdline: [])
        try proc.write(202, comm: "obs", cmdline: [])
        let scanner = ProcessScanner(table: proc.table, classifier: ProcessClassifier())
        let found = scanner.scan()
        #expect(found.map(\.pid) == [200] && found.first?.kind == .screen, "\(found)")
        #expect(found == proc.wholeScan())
        #expect(scanner.process(200)?.arguments.count == 106)
        #expect(scanner.process(201) == nil && scanner.process(999) == nil)
    }

    /// On the real `/proc` the scanner finds what a scan reading everything finds, a running stand-in
    /// recorder among them.
    @Test func theRealProcAgreesWithAWholeScan() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("scanner-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let recorder = try standIn("simplescreenrecorder", [], in: directory)
        defer { end(recorder) }
        let pid = recorder.processIdentifier
        let classifier = ProcessClassifier()
        let scanner = ProcessScanner(table: ProcessTable(), classifier: classifier)
        #expect(eventually { scanner.scan().contains { $0.pid == pid && $0.app == "simplescreenrecorder" } })
        // Other tests start and stop processes meanwhile: compare on the processes both saw.
        let fast = scanner.scan()
        let whole = ProcessTable().snapshot().compactMap(classifier.classify)
        let both = Set(fast.map(\.pid)).intersection(whole.map(\.pid))
        #expect(both.contains(pid))
        #expect(Set(fast.filter { both.contains($0.pid) }) == Set(whole.filter { both.contains($0.pid) }))
    }

    /// A process's files stay open from one scan to the next, at most `keptLimit` processes' worth; the
    /// others are opened at each scan, and the verdicts are the same either way.
    @Test func filesAreKeptOpenUpToTheLimit() throws {
        let proc = try FakeProc()
        defer { proc.cleanUp() }
        try proc.write(500, comm: "bash", cmdline: ["/bin/bash"])
        try proc.write(501, comm: "grim", cmdline: ["grim", "shot.png"])
        try proc.write(502, comm: "sleep", cmdline: ["sleep", "1"])
        let scanner = ProcessScanner(table: proc.table, classifier: ProcessClassifier(), keptLimit: 1)
        #expect(scanner.scan().map(\.pid) == [501])
        #expect(scanner.keptCount == 1)
        try proc.write(502, comm: "scrot", cmdline: ["scrot"])
        #expect(Set(scanner.scan().map(\.pid)) == [501, 502])
        #expect(Set(scanner.scan()) == Set(proc.wholeScan()))
        for pid: Int32 in [500, 501, 502] { try proc.remove(pid) }
        #expect(scanner.scan().isEmpty)
        #expect(scanner.keptCount == 0)
        #expect(ProcessScanner(table: ProcessTable(), classifier: ProcessClassifier()).keptLimit >= 64)
    }

    /// On the real `/proc` a kept `comm` and `cmdline` read what the process is now: a task that execs a
    /// recorder after the scan opened its files is found by the next scan through the same files.
    @Test func keptFilesFollowAnExec() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("exec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let recorder = directory.appendingPathComponent("wf-recorder").path
        try copyExecutable(from: "/bin/sleep", to: recorder)
        let trigger = directory.appendingPathComponent("go").path
        let script = directory.appendingPathComponent("late-exec").path
        try writeExecutable(
            "#!/bin/sh\nwhile [ ! -e '\(trigger)' ]; do sleep 0.02; done\nexec '\(recorder)' 15\n", to: script)
        let task = try runRetryingBusyText {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: script)
            return process
        }
        defer { end(task) }
        let pid = task.processIdentifier
        let scanner = ProcessScanner(table: ProcessTable(), classifier: ProcessClassifier())
        #expect(eventually { ProcessTable().comm(pid) == "late-exec" })
        #expect(!scanner.scan().contains { $0.pid == pid })
        let kept = try #require(scanner.keptDescriptors(of: pid))
        _ = FileManager.default.createFile(atPath: trigger, contents: nil)
        #expect(eventually { scanner.scan().contains { $0.pid == pid && $0.app == "wf-recorder" } })
        let after = try #require(scanner.keptDescriptors(of: pid))
        #expect(after == kept, "the exec'd task is read through the files kept for it")
    }

    @Test(arguments: [
        "ffmpeg\n", "\nffmpeg\r\n", "ff mpeg\u{0B}\u{0C}", "\n", "", "caf\u{E9}\n", "\u{2028}obs\u{85}\n",
        "a\u{0}b\n",
    ])
    func aNameIsTrimmedAsFoundationTrimsIt(_ raw: String) {
        let bytes = Array(raw.utf8)
        let name = bytes.withUnsafeBufferPointer(ProcessTable.commName)
        #expect(name == raw.trimmingCharacters(in: .newlines))
    }
}

@Suite struct WatchedTasksTests {
    /// A task in its window keeps its `comm` open, so a look again is one read of the name, and that
    /// read follows an exec; the file is let go when the task leaves the window.
    @Test func aWatchedTaskKeepsItsNameOpenOnlyWhileInItsWindow() throws {
        let proc = try FakeProc()
        defer { proc.cleanUp() }
        try proc.write(300, comm: "sh", cmdline: ["/bin/sh", "-c", "x"])
        try proc.write(301, comm: "sh", cmdline: ["/bin/sh", "-c", "y"])
        let watched = WatchedTasks(
            scanner: ProcessScanner(table: proc.table, classifier: ProcessClassifier()), keep: { _ in true })
        #expect(watched.classify([300, 301]).isEmpty)
        #expect(watched.count == 2)
        // The name read through the kept file follows an exec (the file rewritten in place).
        try proc.write(301, comm: "parec", cmdline: ["parec", "-d", "x.monitor"])
        #expect(watched.classify([300, 301]).map(\.pid) == [301])
        #expect(watched.classify([301]).isEmpty, "unchanged: not classified again")
        #expect(watched.count == 1)
        #expect(watched.classify([]).isEmpty)
        #expect(watched.count == 0)
    }

    /// On the real `/proc` a watched task that exits is let go at the next look (its kept `comm` reads
    /// as an error once the task is gone), and its descriptor closed.
    @Test func aTaskThatExitsIsLetGo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("watched-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let task = try standIn("watched-task", [], in: directory)
        let pid = task.processIdentifier
        let watched = WatchedTasks(
            scanner: ProcessScanner(table: ProcessTable(), classifier: ProcessClassifier()), keep: { _ in true })
        #expect(watched.classify([pid]).isEmpty)
        #expect(watched.count == 1)
        end(task)
        #expect(watched.classify([pid]).isEmpty)
        #expect(watched.count == 0)
    }

    /// A thread's name changing to a recorder's is reported as its process, once.
    @Test func aThreadCountsAsItsProcess() throws {
        let proc = try FakeProc()
        defer { proc.cleanUp() }
        try proc.write(400, comm: "app", cmdline: ["/usr/bin/app"])
        try proc.write(401, comm: "pw-record", cmdline: ["/usr/bin/app"], tgid: 400)
        let watched = WatchedTasks(
            scanner: ProcessScanner(table: proc.table, classifier: ProcessClassifier()), keep: { $0 != 999 })
        let found = watched.classify([401])
        #expect(found.map(\.pid) == [400] && found.first?.app == "pw-record", "\(found)")
    }
}
