/// The capture-state monitor's core: a pure state machine that merges what every source reports into one
/// state and returns an event for each change. It has no clock and no threads; every input carries the
/// time it happens at.
///
/// Merging: any source reporting `capturing` wins; otherwise a source whose lease has lapsed, or that
/// reports `unknown`, makes the state `unknown`; otherwise the state is `clear` (also with no sources).
public struct CaptureStateMachine: Sendable {
    /// What happens to the machine.
    public enum Input: Sendable {
        /// A live source (remote client, detector) reports; it replaces that source's previous report.
        case report(CaptureReport, at: CaptureTime)
        /// A live source goes away cleanly (a detector stopped on purpose, a client said goodbye).
        case withdraw(source: String, at: CaptureTime)
        /// Time passes; scheduled sources and leases are evaluated at the new instant.
        case advance(to: CaptureTime)
        /// Media time jumped (seek or loop): re-evaluate from `time` without treating the jump as elapsed time.
        case seek(to: CaptureTime)
    }

    /// Sources whose reports follow media time.
    public private(set) var scheduled: [any ScheduledCaptureSource]
    /// The latest report of each live source, by name.
    public private(set) var live: [String: CaptureReport] = [:]
    /// The current merged state, as last announced.
    public private(set) var current: CaptureEvent?
    /// The last instant the machine was told about.
    public private(set) var now: CaptureTime?

    /// Creates a machine with the given scheduled sources and no live ones.
    public init(scheduled: [any ScheduledCaptureSource] = []) {
        self.scheduled = scheduled
    }

    /// Adds a scheduled source; the next input re-evaluates the state.
    public mutating func add(_ source: any ScheduledCaptureSource) {
        scheduled.append(source)
    }

    /// Removes the scheduled source named `name`.
    public mutating func removeScheduled(named name: String) {
        scheduled.removeAll { $0.name == name }
    }

    /// Applies `input` and returns the events it causes: none, or one when the merged state changes.
    public mutating func handle(_ input: Input) -> [CaptureEvent] {
        let time: CaptureTime
        switch input {
        case .report(let report, let at):
            live[report.source] = report
            time = at
        case .withdraw(let source, let at):
            live[source] = nil
            time = at
        case .advance(let to), .seek(let to):
            time = to
        }
        now = time
        let merged = evaluate(at: time)
        if let current, current.state == merged.state { return [] }
        current = merged
        return [merged]
    }

    /// The merged state at `time` given the current reports, without changing anything.
    ///
    /// The returned event's `since` is `time`; the caller keeps the first instant of a run.
    public func evaluate(at time: CaptureTime) -> CaptureEvent {
        var reports = Array(live.values)
        reports.append(contentsOf: scheduled.map { $0.report(at: time.media) })
        reports.sort { $0.source < $1.source }
        var lapsed: CaptureReport? = nil
        var unsure: CaptureReport? = nil
        for report in reports {
            if let lease = report.lease, lease.hasPassed(at: time) {
                if lapsed == nil { lapsed = report }
                continue
            }
            switch report.state {
            case .capturing:
                return CaptureEvent(
                    state: .capturing, source: report.source, reason: report.reason, pid: report.pid,
                    app: report.app, confidence: report.confidence, since: time)
            case .unknown:
                if unsure == nil { unsure = report }
            case .clear:
                break
            }
        }
        if let lapsed {
            return CaptureEvent(
                state: .unknown, source: lapsed.source, reason: "lease lapsed: \(lapsed.reason)", pid: lapsed.pid,
                app: lapsed.app, confidence: lapsed.confidence, since: time)
        }
        if let unsure {
            return CaptureEvent(
                state: .unknown, source: unsure.source, reason: unsure.reason, pid: unsure.pid, app: unsure.app,
                confidence: unsure.confidence, since: time)
        }
        if reports.isEmpty {
            return CaptureEvent(state: .clear, source: "none", reason: "no capture sources", since: time)
        }
        let first = reports[0]
        return CaptureEvent(
            state: .clear, source: reports.count == 1 ? first.source : "all",
            reason: reports.count == 1
                ? first.reason : "\(reports.count) sources clear", confidence: first.confidence, since: time)
    }

    /// The first media time after `media` at which the merged state may change on its own: a scheduled
    /// source's next change or a media-time lease deadline. Wall-time leases are not included; callers
    /// re-evaluate those on every buffer.
    public func nextChange(afterMedia media: Double) -> Double? {
        // Only times strictly later count, whatever a source answers, so a caller stepping from change to
        // change cannot stand still.
        var candidates = scheduled.compactMap { $0.nextChange(after: media) }.filter { $0 > media }
        for report in live.values {
            if case .media(let deadline) = report.lease, deadline > media { candidates.append(deadline) }
        }
        return candidates.min()
    }
}
