public import CaptureMonitor
import Synchronization
import ThreadSupport

/// What one poll of a scanning detector found: the report it makes, before the lease is added.
public struct PollVerdict: Sendable, Hashable {
    /// The state found.
    public var state: CaptureState
    /// Why, in a few words.
    public var reason: String
    /// The process responsible, when one is.
    public var pid: Int32?
    /// Its tool's name, when one is.
    public var app: String?
    /// How sure the verdict is.
    public var confidence: Double

    /// Creates a verdict.
    public init(_ state: CaptureState, reason: String, pid: Int32? = nil, app: String? = nil, confidence: Double) {
        self.state = state
        self.reason = reason
        self.pid = pid
        self.app = app
        self.confidence = confidence
    }
}

/// The polling every scanning source shares (the process scanner, the remote-desktop watcher): the first
/// poll runs inside `start`, so its verdict is in place before playback begins, then one every `interval`
/// on a thread of its own; each verdict is reported with a lease of `lease` seconds, so a poll that hangs
/// or a thread that dies lets the lease lapse to `unknown`.
final class PollingLoop: Sendable {
    /// The thread's name.
    let name: String
    /// Seconds between polls.
    let interval: Double
    /// Seconds each verdict is believed.
    let lease: Double
    private let thread = Mutex<PeriodicThread?>(nil)

    /// The default lease for `interval`: two polls and a margin, at least half a second.
    static func lease(for interval: Double) -> Double { max(interval * 2 + 0.1, 0.5) }

    init(name: String, interval: Double, lease: Double) {
        self.name = name
        self.interval = interval
        self.lease = lease
    }

    /// What one quick check between polls found.
    struct QuickResult: Sendable {
        /// A verdict to report at once, or nil for nothing to say.
        var verdict: PollVerdict?
        /// True when the check wants to look again soon (something is in progress), false when it can
        /// sleep its idle interval.
        var busy: Bool
    }

    /// Polls now and reports, then every `interval` until `stop`. With `quick`, the thread also wakes
    /// between polls and runs `quick`: every `quickInterval` while the last check was busy, every
    /// `idleQuickInterval` (at least `quickInterval`) otherwise, so an idle machine costs fewer wake-ups.
    /// A verdict it returns is reported at once. The regular poll keeps its period.
    func start(
        _ reporter: CaptureReporter, quickInterval: Double? = nil, idleQuickInterval: Double? = nil,
        quick: (@Sendable () -> QuickResult)? = nil, poll: @escaping @Sendable () -> PollVerdict
    ) {
        let lease = lease
        let interval = interval
        let send: @Sendable (PollVerdict) -> Void = { verdict in
            reporter.report(
                verdict.state, reason: verdict.reason, pid: verdict.pid, app: verdict.app,
                confidence: verdict.confidence, lease: lease)
        }
        send(poll())
        let started: PeriodicThread
        if let quick, let quickInterval, quickInterval < interval {
            let idle = min(max(idleQuickInterval ?? quickInterval, quickInterval), interval)
            let lastPoll = Mutex(MonotonicClock.seconds())
            started = PeriodicThread(name: "guardplay.\(name)", interval: quickInterval)
            started.startAdaptive(firstTickAfter: quickInterval) {
                let now = MonotonicClock.seconds()
                // Half a wake-up early rather than a whole one late.
                let due = lastPoll.withLock { last in
                    guard now - last >= interval - quickInterval / 2 else { return false }
                    last = now
                    return true
                }
                if due {
                    send(poll())
                    return idle
                }
                let result = quick()
                if let verdict = result.verdict { send(verdict) }
                return result.busy ? quickInterval : idle
            }
        } else {
            started = PeriodicThread(
                name: "guardplay.\(name)", interval: interval, firstTickAfter: interval
            ) { send(poll()) }
        }
        thread.withLock { $0 = started }
    }

    /// Stops the thread, waiting at most a second for a poll in progress.
    func stop() {
        thread.withLock { $0 }?.stop(waitingAtMost: 1)
    }
}
