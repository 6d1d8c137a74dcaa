import CaptureDetectors
import CaptureMonitor
import Foundation
import Testing

/// A child started with `posix_spawn` and reaped with `waitpid`. Foundation's `Process.waitUntilExit`
/// waits until every inheritor of its bookkeeping descriptor is gone, and PipeWire's daemons outlive
/// the session script that starts them, so the live test manages its processes itself.
struct SpawnedProcess {
    let pid: pid_t

    init(_ arguments: [String], environment: [String: String]) throws {
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(
                &actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own, so that killing the group takes the daemons it starts too.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else { throw PipeWireSetupError(message: "posix_spawn \(arguments[0]): \(status)") }
        self.pid = pid
    }

    /// Kills the process group and reaps the leader.
    func end() {
        kill(-pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// A private PipeWire daemon with WirePlumber, on a D-Bus session of its own, in a fresh runtime folder.
final class PrivatePipeWire {
    let runtime: URL
    let session: SpawnedProcess
    var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime.path] }

    init() throws {
        runtime = FileManager.default.temporaryDirectory.appendingPathComponent("pw-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        session = try SpawnedProcess(
            ["/usr/bin/dbus-run-session", "--", "/bin/sh", "-c", "pipewire & sleep 0.3; exec wireplumber"],
            environment: ["XDG_RUNTIME_DIR": runtime.path])
        guard eventually(timeout: 10, { FileManager.default.fileExists(atPath: runtime.path + "/pipewire-0") }) else {
            session.end()
            throw PipeWireSetupError(message: "pipewire did not create its socket")
        }
    }

    /// Runs a PipeWire tool to completion.
    func run(_ arguments: [String]) throws {
        let tool = try SpawnedProcess(arguments, environment: environment)
        var status: Int32 = 0
        waitpid(tool.pid, &status, 0)
    }

    /// Starts a PipeWire client that runs until ended.
    func spawn(_ arguments: [String]) throws -> SpawnedProcess {
        try SpawnedProcess(arguments, environment: environment)
    }

    /// Kills the session with its daemons and removes the folder.
    func shutDown() {
        session.end()
        try? FileManager.default.removeItem(at: runtime)
    }
}

struct PipeWireSetupError: Error { let message: String }

@Suite(.serialized) struct PipeWireLiveTests {
    @Test func detectsRealRecordersOnARealPipeWire() throws {
        let pipewire = try PrivatePipeWire()
        defer { pipewire.shutDown() }
        try pipewire.run(
            [
                "/usr/bin/pw-cli", "create-node", "adapter",
                "{ factory.name=support.null-audio-sink node.name=guardplay-test-sink media.class=Audio/Sink object.linger=true audio.position=[FL FR] }",
            ])
        let monitor = CaptureMonitor()
        monitor.attach(
            PipeWireCaptureSource(
                rules: PipeWireCaptureRules(playbackSink: "guardplay-test-sink"), interval: 0.05,
                environment: pipewire.environment))
        defer { monitor.stopAll() }
        #expect(eventually { monitor.decision(atMedia: 0).source == "pipewire" })
        #expect(monitor.decision(atMedia: 0).state == .clear)

        // Recording the sink's monitor: audio capture.
        let output = pipewire.runtime.appendingPathComponent("recording.wav").path
        let recorder = try pipewire.spawn(
            ["/usr/bin/pw-record", "--target", "guardplay-test-sink", "-P", "{ stream.capture.sink=true }", output])
        #expect(eventually { monitor.decision(atMedia: 0).state == .capturing })
        #expect(monitor.decision(atMedia: 0).pid == recorder.pid)
        recorder.end()
        #expect(eventually { monitor.decision(atMedia: 0).state == .clear })

        // A wlroots-style portal screencast stream: screen capture.
        let screencast = try pipewire.spawn(
            [
                "/usr/bin/gst-launch-1.0", "-q", "videotestsrc", "is-live=true", "!", "video/x-raw,width=64,height=64",
                "!", "pipewiresink",
                "mode=provide", "stream-properties=p,node.name=xdpw-stream-7,media.class=Stream/Output/Video",
            ])
        #expect(eventually { monitor.decision(atMedia: 0).state == .capturing })
        #expect(monitor.decision(atMedia: 0).reason.contains("xdpw-stream-7"))
        screencast.end()
        #expect(eventually { monitor.decision(atMedia: 0).state == .clear })

        // The daemon dies: the watcher's pw-dump exits and the state fails closed.
        pipewire.shutDown()
        #expect(eventually { monitor.decision(atMedia: 0).state == .unknown })
    }
}
