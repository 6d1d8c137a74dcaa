import CaptureDetectors
import CaptureMonitor
import FoundationEssentials
import Player
import SystemSupport

/// What `--capture-source` asks for: a comma-separated list of `auto`, `simulate`, `process`,
/// `pipewire`, `session`, `remote-desktop`, `mirror`, `remote` and `none`.
struct CaptureSelection: Equatable {
    /// One word of the list.
    enum Word: String, CaseIterable {
        case auto, simulate, process, pipewire, session, remote, none
        case remoteDesktop = "remote-desktop"
        case mirror
    }

    /// The words given.
    let words: Set<Word>

    /// Parses the list; `none` and `simulate` (no detector) do not mix with detectors.
    init(parsing text: String) throws(CLIError) {
        var words = Set<Word>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = item.trimmingSpaces()
            guard let word = Word(rawValue: name) else {
                throw CLIError(
                    .badValue,
                    "invalid value '\(name)' in --capture-source: expected a comma-separated list of "
                        + Word.allCases.map(\.rawValue).joined(separator: ", "))
            }
            words.insert(word)
        }
        let detectors = words.subtracting([.none, .simulate])
        if words.contains(.none) || words.contains(.simulate), !detectors.isEmpty {
            throw CLIError(
                .usage,
                "--capture-source: '\(words.contains(.none) ? "none" : "simulate")' means no detector; "
                    + "it cannot be combined with \(detectors.map(\.rawValue).sorted().joined(separator: ", "))")
        }
        self.words = words
    }

    init(_ words: Set<Word>) {
        self.words = words
    }

    /// The detectors to run: `auto` is the process scanner, the remote-desktop watcher, the PipeWire
    /// watcher when PipeWire runs, the mirrored-display watcher on an X display (where RandR can tell a
    /// mirror from an extended desktop; sysfs alone cannot), and the session type.
    func resolved(pipeWireAvailable: Bool, xDisplay: Bool = false) -> Set<Word> {
        var result = words.subtracting([.auto, .none, .simulate])
        if words.contains(.auto) {
            result.formUnion([.process, .remoteDesktop, .session])
            if pipeWireAvailable { result.insert(.pipewire) }
            if xDisplay { result.insert(.mirror) }
        }
        return result
    }
}

/// The capture detectors of one playback: built from the selection, attached to the monitor, and stopped
/// at the end.
final class CaptureSources {
    /// Seconds between process scans and PipeWire renewals.
    let interval: Double
    /// Seconds between the process scanner's readings of the newest PID, or nil for none.
    let newProcessPoll: Double?
    /// The recorder list the process scanner uses.
    let rules: RecorderRules
    /// `--on-mirror allow`: a mirrored display does not protect.
    let allowMirror: Bool
    private let monitor: CaptureMonitor
    private var watcher: ScreenshotFolderWatcher?
    /// The remote source the gateway's `--control` endpoint reports through, when `remote` is selected.
    private(set) var remote: RemoteCaptureSource?

    init(
        monitor: CaptureMonitor, interval: Double, newProcessPoll: Double? = 0.025, rules: RecorderRules,
        allowMirror: Bool = false
    ) {
        self.monitor = monitor
        self.interval = interval
        self.newProcessPoll = newProcessPoll
        self.rules = rules
        self.allowMirror = allowMirror
    }

    /// Attaches the detectors in `detectors` and returns the notices the user should read;
    /// `remoteEndpoint` says a control endpoint (`--control`) will feed the remote source.
    func attach(
        _ detectors: Set<CaptureSelection.Word>, explicit: Bool, remoteEndpoint: Bool = false, player: Player
    ) -> [String] {
        var notices: [String] = []
        let environment = ProcessInfo.processInfo.environment
        if detectors.contains(.process) {
            monitor.attach(
                ProcessScanSource(
                    interval: interval, quickInterval: newProcessPoll, classifier: ProcessClassifier(rules: rules)))
        }
        if detectors.contains(.remoteDesktop) {
            let source = RemoteDesktopSource(interval: interval)
            monitor.attach(source)
            // A server that runs with nobody watching is clear, but the user should know it is there.
            let idle = RemoteDesktopScan(table: ProcessTable(), servers: .builtIn).idle
            for server in idle {
                notices.append(
                    "remote-desktop: \(server.app) (pid \(server.pid)) is running with no viewer connected; "
                        + "output is protected as soon as a viewer connects")
            }
        }
        if detectors.contains(.mirror) {
            let backend = MirrorSource.Backend.detect(environment: environment)
            monitor.attach(MirrorSource(interval: interval, backend: backend, allowMirror: allowMirror))
            if case .sysfs = backend, explicit, !allowMirror {
                notices.append(
                    "--capture-source mirror without an X display: the DRM connectors in sysfs cannot tell a "
                        + "mirror from an extended desktop, so two or more lit outputs are unknown and protect")
            }
        }
        if detectors.contains(.pipewire) {
            if explicit && !PipeWireCaptureSource.isAvailable {
                notices.append(
                    "--capture-source pipewire: no PipeWire for this user (pw-dump or its socket is missing), "
                        + "so the watcher reports unknown and output is protected")
            }
            monitor.attach(PipeWireCaptureSource(interval: interval))
        }
        if detectors.contains(.session) {
            let session = DisplaySession.detect(environment: environment)
            monitor.attach(SessionTypeSource(session: session))
            if session == .x11 && monitor.policy == .protect {
                notices.append(
                    "X11 session: any program can read the screen unseen, so the capture state is unknown and "
                        + "output is protected (masked and muted); --on-unknown allow, or --capture-source "
                        + "process,pipewire, trusts the detectors instead")
            }
        }
        if detectors.contains(.remote) {
            // The gateway's `--control` endpoint reports through this source. Until a report arrives the
            // state is unknown, so an unreachable or silent client protects rather than exposes.
            let remote = RemoteCaptureSource(client: "control")
            monitor.attach(remote)
            monitor.submit(
                CaptureReport(source: remote.name, state: .unknown, reason: "no remote report yet", confidence: 1))
            self.remote = remote
            if !remoteEndpoint {
                notices.append(
                    "--capture-source remote without --control: no remote client can report, so the state "
                        + "stays unknown and output is protected")
            }
        }
        if !detectors.isEmpty {
            // Screenshots cannot be seen coming; the folders where they land go to the audit trail only.
            watcher = ScreenshotFolderWatcher(folders: ScreenshotFolderWatcher.defaultFolders()) {
                [weak player] sighting in player?.noteScreenshot(sighting.path)
            }
        }
        return notices
    }

    /// Stops the detectors and the folder watcher.
    func stop() {
        watcher?.stop()
        monitor.stopAll()
    }

    /// The built-in recorder list with the user's config file (`$XDG_CONFIG_HOME/guard-play/recorders.conf`,
    /// when it exists) and each `--recorders FILE` applied in turn.
    static func recorderRules(files: [String], environment: [String: String]) throws(CLIError) -> RecorderRules {
        var rules = RecorderRules.builtIn
        var paths: [String] = []
        let configHome =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"].map { "\($0)/.config" })
        if let configHome {
            let path = "\(configHome)/guard-play/recorders.conf"
            if FileManager.default.fileExists(atPath: path) { paths.append(path) }
        }
        paths.append(contentsOf: files)
        for path in paths {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw CLIError(.badValue, "--recorders: cannot read '\(path)'")
            }
            do {
                rules = try rules.applying(config: text)
            } catch {
                throw CLIError(.badValue, "recorder list '\(path)', \(error)")
            }
        }
        return rules
    }

    /// Parses `--poll-interval`: milliseconds (`250`, `250ms`) or seconds (`0.25s`), from 10 ms to 10 s
    /// (or within `range`, in seconds).
    static func pollInterval(_ text: String, within range: ClosedRange<Double> = 0.01...10) -> Double? {
        var number = Substring(text)
        var scale = 0.001
        if number.hasSuffix("ms") {
            number = number.dropLast(2)
        } else if number.hasSuffix("s") {
            number = number.dropLast()
            scale = 1
        }
        guard let value = Double(number), value.isFinite else { return nil }
        let seconds = value * scale
        return range.contains(seconds) ? seconds : nil
    }
}
