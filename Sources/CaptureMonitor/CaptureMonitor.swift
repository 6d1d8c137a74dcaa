import Synchronization

/// The thread-safe capture-state monitor: a `CaptureStateMachine` behind a lock, live sources attached to
/// it, and listeners told of every change.
///
/// Lifecycle: create it with the policy and the scheduled sources, `attach` live sources (each gets a
/// `CaptureReporter`), then have the player `advance(toMedia:)` as it renders. Live reports may arrive on
/// any thread; they take effect at once and the next `advance` sees them. Listeners run on the thread
/// that caused the change, after the lock is released, and must return quickly (an audio callback may be
/// that thread).
public final class CaptureMonitor: Sendable {
    private struct Inner {
        var machine: CaptureStateMachine
        var media: Double = 0
        var sources: [String: any LiveCaptureSource] = [:]
        var listeners: [Int: @Sendable (CaptureEvent) -> Void] = [:]
        var nextListener = 0
        var history: [CaptureEvent] = []
    }

    private let inner: Mutex<Inner>
    private let wallClock: @Sendable () -> Double
    /// What `unknown` means for the output.
    public let policy: UnknownPolicy

    /// Creates a monitor with `scheduled` sources; `wallClock` gives monotonic seconds (tests pass a fake).
    public init(
        policy: UnknownPolicy = .protect, scheduled: [any ScheduledCaptureSource] = [],
        wallClock: @escaping @Sendable () -> Double = MonotonicClock.seconds
    ) {
        self.policy = policy
        self.wallClock = wallClock
        inner = Mutex(Inner(machine: CaptureStateMachine(scheduled: scheduled)))
    }

    /// The current instant: the last media time the player reached and the wall clock now.
    public var now: CaptureTime { CaptureTime(media: inner.withLock { $0.media }, wall: wallClock()) }

    /// The state as last announced (evaluating at the current instant if nothing was announced yet).
    public var current: CaptureEvent {
        let time = now
        return inner.withLock { $0.machine.current ?? $0.machine.evaluate(at: time) }
    }

    /// Every event announced so far, oldest first.
    public var history: [CaptureEvent] { inner.withLock { $0.history } }

    /// True when output must be protected now.
    public var isProtecting: Bool { current.isProtecting(under: policy) }

    /// Moves media time to `media` and announces a change if there is one; returns the state in force.
    @discardableResult
    public func advance(toMedia media: Double) -> CaptureEvent {
        apply { inner, wall in
            inner.media = media
            return .advance(to: CaptureTime(media: media, wall: wall))
        }
    }

    /// Re-evaluates at the current media time and wall clock, so a lapsed wall-clock lease is announced
    /// even while media time stands still (paused, or between frames).
    @discardableResult
    public func tick() -> CaptureEvent {
        apply { inner, wall in .advance(to: CaptureTime(media: inner.media, wall: wall)) }
    }

    /// Jumps media time to `media` (seek or loop) and announces a change if there is one.
    @discardableResult
    public func seek(toMedia media: Double) -> CaptureEvent {
        apply { inner, wall in
            inner.media = media
            return .seek(to: CaptureTime(media: media, wall: wall))
        }
    }

    /// Takes a live report (normally through a `CaptureReporter`), stamped with the current instant.
    @discardableResult
    public func submit(_ report: CaptureReport) -> CaptureEvent {
        apply { inner, wall in .report(report, at: CaptureTime(media: inner.media, wall: wall)) }
    }

    /// Forgets a live source's report.
    @discardableResult
    public func withdraw(source: String) -> CaptureEvent {
        apply { inner, wall in .withdraw(source: source, at: CaptureTime(media: inner.media, wall: wall)) }
    }

    /// The state at media time `media` with the reports in force now, without announcing anything: what
    /// a frame presented at `media` must show.
    public func decision(atMedia media: Double) -> CaptureEvent {
        let wall = wallClock()
        return inner.withLock { $0.machine.evaluate(at: CaptureTime(media: media, wall: wall)) }
    }

    /// The first media time after `media` where the state may change on its own (see
    /// `CaptureStateMachine.nextChange(afterMedia:)`).
    public func nextChange(afterMedia media: Double) -> Double? {
        inner.withLock { $0.machine.nextChange(afterMedia: media) }
    }

    /// Adds a scheduled source at run time.
    public func add(_ source: any ScheduledCaptureSource) {
        inner.withLock { $0.machine.add(source) }
    }

    /// Starts `source` with a reporter bound to this monitor; a source of the same name is stopped first.
    public func attach(_ source: any LiveCaptureSource) {
        let previous = inner.withLock { inner in
            let previous = inner.sources[source.name]
            inner.sources[source.name] = source
            return previous
        }
        previous?.stop()
        source.start(CaptureReporter(source: source.name, monitor: self))
    }

    /// The names of the attached live sources.
    public var liveSourceNames: [String] { inner.withLock { Array($0.sources.keys) } }

    /// Stops a live source and forgets its report.
    public func detach(source name: String) {
        let source = inner.withLock { $0.sources.removeValue(forKey: name) }
        source?.stop()
        withdraw(source: name)
    }

    /// Stops every live source.
    public func stopAll() {
        let sources = inner.withLock { inner in
            let all = Array(inner.sources.values)
            inner.sources.removeAll()
            return all
        }
        for source in sources { source.stop() }
    }

    /// Calls `listener` with every event from now on; returns a token for `removeListener`.
    @discardableResult
    public func addListener(_ listener: @escaping @Sendable (CaptureEvent) -> Void) -> Int {
        inner.withLock { inner in
            let token = inner.nextListener
            inner.nextListener += 1
            inner.listeners[token] = listener
            return token
        }
    }

    /// Stops calling the listener registered under `token`.
    public func removeListener(_ token: Int) {
        _ = inner.withLock { $0.listeners.removeValue(forKey: token) }
    }

    private func apply(_ make: (inout Inner, Double) -> CaptureStateMachine.Input) -> CaptureEvent {
        let wall = wallClock()
        let (events, current, listeners) = inner.withLock { inner in
            let input = make(&inner, wall)
            let events = inner.machine.handle(input)
            inner.history.append(contentsOf: events)
            let current =
                inner.machine.current ?? inner.machine.evaluate(at: CaptureTime(media: inner.media, wall: wall))
            return (events, current, events.isEmpty ? [] : Array(inner.listeners.values))
        }
        for event in events {
            for listener in listeners { listener(event) }
        }
        return current
    }
}

/// A source that pushes reports when it learns something: the gateway's remote client reports, a process
/// scanner, a PipeWire watcher. It plugs into a `CaptureMonitor` with `attach` and never needs the monitor
/// changed.
///
/// A source that polls should report with a lease of about twice its polling interval, so that if it
/// hangs or crashes the lease lapses and the state turns `unknown` (fail closed).
public protocol LiveCaptureSource: AnyObject, Sendable {
    /// The source's name in events; unique per monitor.
    var name: String { get }
    /// Begins reporting through `reporter` (from any thread, as often as the source likes).
    func start(_ reporter: CaptureReporter)
    /// Stops reporting and releases what the source holds (threads, watches).
    func stop()
}

/// The handle a live source reports through; it stamps reports with the monitor's clock.
public struct CaptureReporter: Sendable {
    /// The name reports are filed under.
    public let source: String
    private let deliver: @Sendable (CaptureReport?) -> Void
    private let wallClock: @Sendable () -> Double

    init(source: String, monitor: CaptureMonitor) {
        self.source = source
        self.wallClock = { [weak monitor] in monitor?.now.wall ?? 0 }
        self.deliver = { [weak monitor] report in
            guard let monitor else { return }
            if let report { monitor.submit(report) } else { monitor.withdraw(source: source) }
        }
    }

    /// Creates a reporter that hands reports to `deliver` (nil means withdraw); for tests and adapters.
    public init(
        source: String, wallClock: @escaping @Sendable () -> Double,
        deliver: @escaping @Sendable (CaptureReport?) -> Void
    ) {
        self.source = source
        self.wallClock = wallClock
        self.deliver = deliver
    }

    /// Reports `state`, believed for `lease` seconds of wall time from now (nil: until replaced).
    public func report(
        _ state: CaptureState, reason: String, pid: Int32? = nil, app: String? = nil, confidence: Double = 1,
        lease: Double? = nil
    ) {
        let deadline = lease.map { CaptureDeadline.wall(wallClock() + $0) }
        deliver(
            CaptureReport(
                source: source, state: state, reason: reason, pid: pid, app: app, confidence: confidence,
                lease: deadline))
    }

    /// Withdraws the source's report, as when it stops on purpose.
    public func withdraw() { deliver(nil) }
}

/// Monotonic seconds since the first use, from `ContinuousClock`.
public enum MonotonicClock {
    private static let origin = ContinuousClock.now

    /// Seconds elapsed since the origin.
    @Sendable public static func seconds() -> Double {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    }
}
