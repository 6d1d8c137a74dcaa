import CaptureDetectors
import CaptureMonitor
import Foundation
import ProcessTestSupport
import Testing

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
            throw SpawnError("pipewire did not create its socket")
        }
    }

    /// Runs a PipeWire tool to completion (10 s at most).
    func run(_ arguments: [String]) throws {
        let tool = try SpawnedProcess(arguments, environment: environment)
        tool.wait(timeout: 10)
        tool.end()
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
