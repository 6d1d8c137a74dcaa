public import CaptureMonitor
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import SystemSupport
import ThreadSupport

/// The PipeWire registry watcher as a capture source. It runs `pw-dump --monitor`, keeps the object graph
/// up to date and reports what `PipeWireCaptureRules` read from it: at once when an update changes the
/// verdict, and again every `interval` to renew the lease. When `pw-dump` exits or its output stops
/// parsing, the source reports `unknown`.
///
/// `start` waits up to `startTimeout` for the first full dump, so the first report is in place before
/// playback begins; until a dump arrives the source reports `unknown`.
public final class PipeWireCaptureSource: LiveCaptureSource {
    private struct State {
        var graph = PipeWireGraph()
        var ready = false
        var failure: String?
        var process: ChildProcess?
        var heartbeat: PeriodicThread?
        var reporter: CaptureReporter?
        var lastVerdict: [PipeWireDetection]?
        var announcedReady = false
    }

    public let name: String
    /// The `pw-dump` executable and its arguments.
    public let command: [String]
    /// Seconds between renewals.
    public let interval: Double
    /// Seconds `start` waits for the first dump.
    public let startTimeout: Double
    /// Variables set for `pw-dump` on top of GuardPlay's own environment (such as `XDG_RUNTIME_DIR`).
    public let environment: [String: String]
    private let rules: PipeWireCaptureRules
    private let state = Mutex(State())
    /// Signalled once, when the first dump has been applied or the watcher failed.
    private let firstDump = DispatchSemaphore(value: 0)

    /// Creates a watcher running `command` (by default `pw-dump --monitor --no-colors` from `PATH`).
    public init(
        name: String = "pipewire", command: [String] = ["pw-dump", "--monitor", "--no-colors"],
        rules: PipeWireCaptureRules = .ignoringThisProcess, interval: Double = 0.25, startTimeout: Double = 2,
        environment: [String: String] = [:]
    ) {
        self.name = name
        self.environment = environment
        self.command = command
        self.rules = rules
        self.interval = interval
        self.startTimeout = startTimeout
    }

    /// Seconds each report is believed: two renewals and a margin.
    public var lease: Double { max(interval * 2 + 0.1, 0.5) }

    /// True when `pw-dump` is on `PATH` and a PipeWire socket exists for this user.
    public static var isAvailable: Bool {
        guard findExecutable("pw-dump") != nil else { return false }
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        let remote = ProcessInfo.processInfo.environment["PIPEWIRE_REMOTE"] ?? "pipewire-0"
        return FileManager.default.fileExists(atPath: remote.hasPrefix("/") ? remote : runtime + "/" + remote)
    }

    public func start(_ reporter: CaptureReporter) {
        guard let executable = command.first.flatMap(Self.findExecutable) else {
            reporter.report(.unknown, reason: "pw-dump not found: cannot watch PipeWire", confidence: 1)
            return
        }
        state.withLock { $0.reporter = reporter }
        reporter.report(.unknown, reason: "waiting for PipeWire's first dump", confidence: 1)
        let process: ChildProcess
        do {
            process = try ChildProcess(
                executable: executable, arguments: Array(command.dropFirst()),
                environment: ProcessInfo.processInfo.environment.merging(environment) { _, override in override })
        } catch {
            reporter.report(.unknown, reason: "cannot start pw-dump: \(error)", confidence: 1)
            return
        }
        state.withLock { $0.process = process }
        startThread(name: "guardplay.pipewire-reader") { [weak self] in
            var splitter = JSONArraySplitter()
            // Reaps pw-dump once its output ends, whoever ended it.
            defer { process.waitForExit() }
            while true {
                let bytes = process.read(upTo: 65536)
                if bytes.isEmpty { break }
                do {
                    for array in try splitter.feed(bytes) {
                        try self?.update { state throws(PipeWireParseError) in
                            try state.graph.apply(json: array)
                            state.ready = true
                        }
                    }
                } catch {
                    self?.update { $0.failure = "\(error)" }
                    break
                }
            }
            self?.update { state in
                if state.failure == nil { state.failure = "pw-dump exited" }
            }
        }
        // The first report should be the graph's verdict, not "waiting": pw-dump prints the whole graph
        // within milliseconds of connecting.
        _ = firstDump.wait(timeout: .now() + startTimeout)
        let heartbeat = PeriodicThread(name: "guardplay.pipewire", interval: interval) { [weak self] in
            self?.update(renew: true) { _ in }
        }
        state.withLock { $0.heartbeat = heartbeat }
    }

    /// Changes the state and reports the verdict if it changed (or `renew` asks for a renewal). Reports
    /// go out under the lock, so the reader's and the heartbeat's reports never cross.
    private func update<E: Error>(renew: Bool = false, _ change: (inout State) throws(E) -> Void) throws(E) {
        try state.withLock { state throws(E) in
            try change(&state)
            if !state.announcedReady, state.ready || state.failure != nil {
                state.announcedReady = true
                firstDump.signal()
            }
            guard let reporter = state.reporter else { return }
            if let failure = state.failure {
                reporter.report(.unknown, reason: "PipeWire watcher stopped: \(failure)", confidence: 1)
                return
            }
            guard state.ready else { return }
            let found = rules.detections(in: state.graph)
            guard renew || found != state.lastVerdict else { return }
            state.lastVerdict = found
            if let first = found.first {
                reporter.report(
                    .capturing, reason: first.reason, pid: first.pid, app: first.app, confidence: first.confidence,
                    lease: lease)
            } else {
                reporter.report(
                    .clear, reason: "no screencast or monitor recording in PipeWire", confidence: 0.9, lease: lease)
            }
        }
    }

    public func stop() {
        let (process, heartbeat) = state.withLock { state in
            defer {
                state.process = nil
                state.heartbeat = nil
                state.reporter = nil
            }
            return (state.process, state.heartbeat)
        }
        heartbeat?.stop(waitingAtMost: 1)
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
