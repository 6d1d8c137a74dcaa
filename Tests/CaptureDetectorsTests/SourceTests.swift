import CaptureDetectors
import CaptureMonitor
import Foundation
import ProcessTestSupport
import Synchronization
import Testing

/// A wall clock the test moves by hand.
final class ManualClock: Sendable {
    private let value = Mutex(0.0)
    var now: Double { value.withLock { $0 } }
    func advance(_ seconds: Double) { value.withLock { $0 += seconds } }
}

/// Starts a process whose `comm` is `name` and whose command line is `arguments`: a copy of `sleep`
/// named `name` when there are no arguments, otherwise a shell script named `name` (so the command line is
/// `/bin/sh …/name arguments…`, as for a real script such as kazam).
///
/// A stand-in ends on its own after 15 s (a test ends it sooner), so one a crashed test leaves behind does
/// not look like a recorder to other tests or runs for long.
func standIn(_ name: String, _ arguments: [String], in directory: URL) throws -> Process {
    let path = directory.appendingPathComponent(name)
    if arguments.isEmpty {
        try copyExecutable(from: "/bin/sleep", to: path.path)
    } else {
        // Short sleeps in a loop: a killed script leaves no long-lived child holding its descriptors.
        try writeExecutable("#!/bin/sh\ni=0\nwhile [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done\n", to: path.path)
    }
    return try runRetryingBusyText {
        let process = Process()
        process.executableURL = path
        process.arguments = arguments.isEmpty ? ["15"] : arguments
        return process
    }
}

/// Ends a stand-in at once (SIGKILL: a test runner may start children with SIGTERM ignored) and reaps it.
func end(_ process: Process) {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
}

@Suite(.serialized) struct ProcessScanSourceTests {
    @Test(arguments: ProcessClassifierTests.recorders)
    func detectsAStandInRecorder(_ name: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("standin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let scanner = ProcessClassifier()
        let process = try standIn(name, [], in: directory)
        defer { end(process) }
        let pid = process.processIdentifier
        #expect(
            eventually {
                ProcessTable().snapshot().filter { $0.pid == pid }.compactMap(scanner.classify).first?.app == name
            }, "\(name) not detected")
    }

    @Test func detectsFFmpegGrabbingButNotTranscoding() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("standin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let transcoder = try standIn("ffmpeg", ["-i", "a.mp4", "b.mkv"], in: directory)
        defer { end(transcoder) }
        // The scan reads the real /proc but looks only at this test's own stand-ins: other tests (and
        // other test runs on the machine) start real recorders at the same time.
        let ours = Mutex<Set<Int32>>([transcoder.processIdentifier])
        let classifier = ProcessClassifier()
        let monitor = CaptureMonitor()
        monitor.attach(
            ProcessScanSource(interval: 0.05) {
                let pids = ours.withLock { $0 }
                return ProcessTable().snapshot().filter { pids.contains($0.pid) }.compactMap(classifier.classify)
            })
        defer { monitor.stopAll() }
        // The first scan ran inside `attach`: its verdict is in force at once.
        #expect(monitor.decision(atMedia: 0).source == "process-scan")
        #expect(monitor.decision(atMedia: 0).state == .clear, "a transcoding ffmpeg must not count")

        let grabberDirectory = directory.appendingPathComponent("grab")
        try FileManager.default.createDirectory(at: grabberDirectory, withIntermediateDirectories: true)
        let grabber = try standIn("ffmpeg", ["-f", "x11grab", "-i", ":0", "out.mkv"], in: grabberDirectory)
        ours.withLock { _ = $0.insert(grabber.processIdentifier) }
        #expect(eventually { monitor.decision(atMedia: 0).state == .capturing })
        let event = monitor.decision(atMedia: 0)
        #expect(event.pid == grabber.processIdentifier && event.app == "ffmpeg")
        end(grabber)
        #expect(eventually { monitor.decision(atMedia: 0).state == .clear })
    }

    @Test func hangingScanLapsesToUnknown() throws {
        let clock = ManualClock()
        let monitor = CaptureMonitor(wallClock: { clock.now })
        let calls = Mutex(0)
        let never = DispatchSemaphore(value: 0)
        let source = ProcessScanSource(interval: 0.05, lease: 0.5) {
            let first = calls.withLock { calls in
                calls += 1
                return calls == 1
            }
            if !first { never.wait() }  // the second scan hangs, as on a /proc read stuck in the kernel
            return []
        }
        monitor.attach(source)
        defer {
            never.signal()
            monitor.stopAll()
        }
        #expect(eventually { monitor.decision(atMedia: 0).source == "process-scan" })
        #expect(monitor.decision(atMedia: 0).state == .clear)
        #expect(monitor.decision(atMedia: 0).isProtecting(under: .protect) == false)
        clock.advance(0.6)
        let lapsed = monitor.decision(atMedia: 0)
        #expect(lapsed.state == .unknown)
        #expect(lapsed.isProtecting(under: .protect))
        #expect(!lapsed.isProtecting(under: .allow))
    }
}

@Suite struct PipeWireSourceTests {
    /// A stand-in `pw-dump` that prints a recorded idle graph, then the monitor recording, then dies.
    @Test func followsAFakeDumpAndFailsClosedWhenItDies() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pwdump-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let gate = directory.appendingPathComponent("go")
        let script = directory.appendingPathComponent("pw-dump")
        let body = """
            #!/bin/sh
            cat '\(fixtures.path)/idle-playback.json'
            while [ ! -e '\(gate.path)' ]; do sleep 0.05; done
            cat '\(fixtures.path)/audio-monitor-record.json'
            while [ ! -e '\(gate.path).2' ]; do sleep 0.05; done
            exit 3
            """
        try writeExecutable(body, to: script.path)

        let monitor = CaptureMonitor()
        monitor.attach(
            PipeWireCaptureSource(
                command: [script.path], rules: PipeWireCaptureRules(playbackSink: "guardplay-sink"), interval: 0.05))
        defer { monitor.stopAll() }
        // `start` waited for the first dump: its verdict is in force at once.
        #expect(monitor.decision(atMedia: 0).source == "pipewire")
        #expect(monitor.decision(atMedia: 0).state == .clear)
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        #expect(eventually { monitor.decision(atMedia: 0).state == .capturing })
        #expect(monitor.decision(atMedia: 0).app == "pw-cat")
        _ = FileManager.default.createFile(atPath: gate.path + ".2", contents: nil)
        #expect(eventually { monitor.decision(atMedia: 0).state == .unknown })
        #expect(monitor.decision(atMedia: 0).reason.contains("PipeWire watcher stopped"))
    }

    @Test func silentPwDumpIsUnknownUntilItsFirstDump() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pwdump-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("pw-dump")
        try writeExecutable("#!/bin/sh\nexec sleep 5\n", to: script.path)
        let monitor = CaptureMonitor()
        // `start` (inside `attach`) gives up waiting after the start timeout and leaves `unknown` in force.
        monitor.attach(PipeWireCaptureSource(command: [script.path], interval: 0.05, startTimeout: 0.2))
        defer { monitor.stopAll() }
        let event = monitor.decision(atMedia: 0)
        #expect(event.state == .unknown && event.reason.contains("waiting for PipeWire's first dump"))
    }

    @Test func missingPwDumpIsUnknown() {
        let monitor = CaptureMonitor()
        monitor.attach(PipeWireCaptureSource(command: ["/nonexistent/pw-dump"]))
        defer { monitor.stopAll() }
        let event = monitor.decision(atMedia: 0)
        #expect(event.state == .unknown && event.reason.contains("pw-dump not found"))
    }
}

@Suite struct SessionTypeTests {
    @Test(arguments: [
        (["XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"], DisplaySession.wayland),
        (["XDG_SESSION_TYPE": "x11", "WAYLAND_DISPLAY": "wayland-0"], .x11),
        (["WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"], .wayland),
        (["DISPLAY": ":99"], .x11),
        ([:], DisplaySession.none),
        (["DISPLAY": ""], DisplaySession.none),
    ])
    func detectsTheSession(_ environment: [String: String], _ expected: DisplaySession) {
        #expect(DisplaySession.detect(environment: environment) == expected)
    }

    @Test func x11IsUnknownAndThePolicyDecides() {
        let protect = CaptureMonitor(policy: .protect)
        protect.attach(SessionTypeSource(session: .x11))
        #expect(protect.decision(atMedia: 0).state == .unknown)
        #expect(protect.isProtecting)
        let wayland = CaptureMonitor()
        wayland.attach(SessionTypeSource(session: .wayland))
        #expect(wayland.decision(atMedia: 0).state == .clear)
    }
}

@Suite struct ScreenshotFolderWatcherTests {
    @Test func reportsNewImagesOnly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shots-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let seen = Mutex<[String]>([])
        let watcher = try #require(
            ScreenshotFolderWatcher(folders: [folder.path]) { sighting in seen.withLock { $0.append(sighting.path) } })
        defer { watcher.stop() }
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: folder.appendingPathComponent("Screenshot 1.png"))
        try Data("notes".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        let staging = folder.deletingLastPathComponent().appendingPathComponent("staging-\(UUID().uuidString).JPG")
        try Data([0xFF, 0xD8]).write(to: staging)
        try FileManager.default.moveItem(at: staging, to: folder.appendingPathComponent("moved.JPG"))
        #expect(eventually { seen.withLock { $0.count } == 2 })
        let paths = seen.withLock { $0 }
        #expect(paths.contains(folder.appendingPathComponent("Screenshot 1.png").path))
        #expect(paths.contains(folder.appendingPathComponent("moved.JPG").path))
        #expect(!paths.contains { $0.hasSuffix("notes.txt") })
    }

    @Test func defaultFoldersFollowTheXDGConfig() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("home-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        for folder in ["Pictures/Screenshots", "Bilder", ".config"] {
            try FileManager.default.createDirectory(
                at: home.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try "XDG_PICTURES_DIR=\"$HOME/Bilder\"\n".write(
            to: home.appendingPathComponent(".config/user-dirs.dirs"), atomically: true, encoding: .utf8)
        let folders = ScreenshotFolderWatcher.defaultFolders(environment: ["HOME": home.path])
        #expect(folders == ["Pictures/Screenshots", "Pictures", "Bilder"].map { home.appendingPathComponent($0).path })
        #expect(ScreenshotFolderWatcher(folders: ["/nonexistent/folder"]) { _ in } == nil)
    }
}
