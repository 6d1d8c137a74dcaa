import Synchronization

/// A client that reports its capture state over the network (the gateway's `PUT capture-state` with a
/// sequence number and a lease). Stale or repeated sequence numbers are ignored; a client that stops
/// reporting lets its lease lapse, which makes the state `unknown`.
public final class RemoteCaptureSource: LiveCaptureSource {
    /// What became of a received report.
    public enum Outcome: Sendable, Equatable {
        /// Applied.
        case accepted
        /// Ignored: its sequence number is not newer than the last applied one.
        case stale(lastSequence: UInt64)
        /// Ignored: the source is not attached to a monitor.
        case detached
    }

    private struct State {
        var reporter: CaptureReporter?
        var lastSequence: UInt64?
    }

    private let state = Mutex(State())
    public let name: String

    /// Creates a source named `remote:<client>`.
    public init(client: String) {
        name = "remote:\(client)"
    }

    public func start(_ reporter: CaptureReporter) {
        state.withLock { $0.reporter = reporter }
    }

    public func stop() {
        state.withLock { $0.reporter = nil }
    }

    /// Applies a client's report if `sequence` is newer than the last one; `lease` is in seconds.
    ///
    /// The sequence check and the report happen under one lock, so reports reach the monitor in sequence
    /// order: of two concurrent calls, the older one either is refused as stale or is applied first and then
    /// replaced. (Checking under the lock and reporting after it let seq 5 `clear` land after seq 6
    /// `capturing`, failing open.) The monitor's listeners therefore run under this lock too; they must not
    /// call back into this source.
    public func receive(
        _ captureState: CaptureState, sequence: UInt64, lease: Double, reason: String = "remote report",
        pid: Int32? = nil, app: String? = nil, confidence: Double = 1
    ) -> Outcome {
        state.withLock { state in
            guard let reporter = state.reporter else { return .detached }
            if let last = state.lastSequence, sequence <= last { return .stale(lastSequence: last) }
            state.lastSequence = sequence
            reporter.report(captureState, reason: reason, pid: pid, app: app, confidence: confidence, lease: lease)
            return .accepted
        }
    }
}

/// A switch the user flips (the `r` key): while on, it reports `capturing`; while off, it reports nothing.
public final class ManualCaptureSource: LiveCaptureSource {
    private struct State {
        var reporter: CaptureReporter?
        var on = false
    }

    private let state = Mutex(State())
    public let name: String

    /// Creates a switch named `name`, initially off.
    public init(name: String = "manual") {
        self.name = name
    }

    public func start(_ reporter: CaptureReporter) {
        state.withLock { $0.reporter = reporter }
    }

    public func stop() {
        state.withLock { $0.reporter = nil }
    }

    /// True while the switch is on.
    public var isOn: Bool { state.withLock { $0.on } }

    /// Flips the switch and reports the new position; returns it.
    @discardableResult
    public func toggle() -> Bool {
        // Reported under the lock, so two quick toggles reach the monitor in the order they happened.
        state.withLock { state in
            state.on.toggle()
            if state.on {
                state.reporter?.report(.capturing, reason: "recording toggled on by the user")
            } else {
                state.reporter?.withdraw()
            }
            return state.on
        }
    }
}
