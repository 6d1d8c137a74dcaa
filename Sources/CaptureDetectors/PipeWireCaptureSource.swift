public import CaptureMonitor
import Foundation
import Synchronization

/// The PipeWire registry watcher as a capture source. It runs `pw-dump --monitor`, keeps the object graph
/// up to date and reports what `PipeWireCaptureRules` read from it. Reports are renewed every `interval`
/// while `pw-dump` lives; when it exits or its output stops parsing, the source reports `unknown`.
public final class PipeWireCaptureSource: LiveCaptureSource {
    private struct State {
        var graph = PipeWireGraph()
        var ready = false
        var failure: String?
        var process: Process?
        var heartbeat: PollingThread?
    }

    public let name: String
    /// The `pw-dump` executable and its arguments.
    public let command: [String]
    /// Seconds between renewals.
    public let interval: Double
    /// Variables set for `pw-dump` on top of GuardPlay's own environment (such as `XDG_RUNTIME_DIR`).
    public let environment: [String: String]
    private let rules: PipeWireCaptureRules
    private let state = Mutex(State())

    /// Creates a watcher running `command` (by default `pw-dump --monitor --no-colors` from `PATH`).
    public init(
        name: String = "pipewire", command: [String] = ["pw-dump", "--monitor", "--no-colors"],
        rules: PipeWireCaptureRules = .ignoringThisProcess, interval: Double = 0.25, environment: [String: String] = [:]
    ) {
        self.name = name
        self.environment = environment
        self.command = command
        self.rules = rules
        self.interval = interval
    }

    /// True when `pw-dump` is on `PATH` and a PipeWire socket exists for this user.
    public static var isAvailable: Bool {
        guard findExecutable("pw-dump") != nil else { return false }
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        let remote = ProcessInfo.processInfo.environment["PIPEWIRE_REMOTE"] ?? "pipewire-0"
        return FileManager.default.fileExists(atPath: remote.hasPrefix("/") ? remote : runtime + "/" + remote)
    }

    public func start(_ reporter: CaptureReporter) {
        let process = Process()
        let output = Pipe()
        guard let executable = command.first.flatMap(Self.findExecutable) else {
            reporter.report(.unknown, reason: "pw-dump not found: cannot watch PipeWire", confidence: 1)
            return
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(command.dropFirst())
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, override in override }
        }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            reporter.report(.unknown, reason: "cannot start pw-dump: \(error.localizedDescription)", confidence: 1)
            return
        }
        let reader = output.fileHandleForReading
        let rules = rules
        let thread = Thread { [weak self] in
            var splitter = JSONArraySplitter()
            while true {
                let bytes = reader.availableData
                if bytes.isEmpty { break }
                do {
                    for array in try splitter.feed(bytes) {
                        try self?.state.withLock { state in
                            try state.graph.apply(json: array)
                            state.ready = true
                        }
                    }
                } catch {
                    self?.state.withLock { $0.failure = "\(error)" }
                    break
                }
            }
            self?.state.withLock { state in
                if state.failure == nil { state.failure = "pw-dump exited" }
            }
        }
        thread.name = "guardplay.pipewire-reader"
        let lease = max(interval * 2 + 0.1, 0.5)
        let heartbeat = PollingThread(name: "guardplay.pipewire", interval: interval) { [weak self] in
            guard let snapshot = self?.state.withLock({ ($0.graph, $0.ready, $0.failure) }) else { return }
            if let failure = snapshot.2 {
                reporter.report(.unknown, reason: "PipeWire watcher stopped: \(failure)", confidence: 1)
                return
            }
            guard snapshot.1 else { return }
            let found = rules.detections(in: snapshot.0)
            if let first = found.first {
                reporter.report(
                    .capturing, reason: first.reason, pid: first.pid, app: first.app, confidence: first.confidence,
                    lease: lease)
            } else {
                reporter.report(
                    .clear, reason: "no screencast or monitor recording in PipeWire", confidence: 0.9, lease: lease)
            }
        }
        state.withLock { state in
            state.process = process
            state.heartbeat = heartbeat
        }
        thread.start()
    }

    public func stop() {
        let (process, heartbeat) = state.withLock { state in
            defer {
                state.process = nil
                state.heartbeat = nil
            }
            return (state.process, state.heartbeat)
        }
        heartbeat?.stop()
        if let process, process.isRunning { process.terminate() }
    }

    static func findExecutable(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
