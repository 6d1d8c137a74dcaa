public import CaptureMonitor
public import FoundationEssentials

// A session's capture state is the player's `CaptureState` (clear, capturing, unknown): for a session,
// `clear` and `capturing` hold while the client's last report is within its lease, and `unknown` (which
// protects, like capturing) is the state before any report and after a lapse.

/// One change of a session's capture state.
public struct CaptureChange: Sendable, Equatable {
    /// The new state.
    public let state: CaptureState
    /// The state before.
    public let previous: CaptureState
    /// Why: `reported` or `lease-lapsed`.
    public let reason: String
    /// When the gateway applied it.
    public let since: Date
    /// The report's sequence number, for reported changes.
    public let seq: UInt64?
    /// When the client observed it, for reported changes.
    public let observedAt: Date?
}

/// What became of one capture report.
public enum CaptureReportOutcome: Sendable, Equatable {
    /// The report was newer than any before it: the lease is renewed; `change` is set when the state
    /// changed.
    case applied(change: CaptureChange?)
    /// A report with this or a later sequence number was already applied; this one changed nothing.
    case outOfOrder(lastSeq: UInt64)
}

/// The capture-state state machine of one session, fed by client reports that each renew a lease.
/// It starts `unknown`; a report sets `clear` or `capturing` until `leaseExpiresAt`; when the lease
/// lapses without a newer report the state returns to `unknown`. Reports whose `seq` is not greater
/// than the last applied one are ignored. Pure: the caller supplies the time.
public struct CaptureLease: Sendable, Equatable {
    /// How long a report holds.
    public let leaseDuration: TimeInterval
    /// The current state.
    public private(set) var state: CaptureState = .unknown
    /// When the current state began.
    public private(set) var since: Date
    /// The last applied report's sequence number.
    public private(set) var lastSeq: UInt64?
    /// When the last applied report was observed by the client.
    public private(set) var observedAt: Date?
    /// When the current lease runs out; nil when there is none.
    public private(set) var leaseExpiresAt: Date?

    /// A machine in `unknown` since `start`.
    public init(leaseDuration: TimeInterval, start: Date) {
        self.leaseDuration = leaseDuration
        since = start
    }

    /// Applies a client report received at `now`.
    public mutating func report(capturing: Bool, seq: UInt64, observedAt: Date, now: Date) -> CaptureReportOutcome {
        if let lastSeq, seq <= lastSeq { return .outOfOrder(lastSeq: lastSeq) }
        lastSeq = seq
        self.observedAt = observedAt
        leaseExpiresAt = now.addingTimeInterval(leaseDuration)
        let next: CaptureState = capturing ? .capturing : .clear
        return .applied(change: move(to: next, reason: "reported", now: now, seq: seq, observedAt: observedAt))
    }

    /// Lets the lease lapse when `now` is at or past its end.
    public mutating func expire(now: Date) -> CaptureChange? {
        guard let leaseExpiresAt, now >= leaseExpiresAt else { return nil }
        self.leaseExpiresAt = nil
        return move(to: .unknown, reason: "lease-lapsed", now: now, seq: nil, observedAt: nil)
    }

    /// Takes on the state another node applied (from a stored session event): its state, lease and
    /// last sequence number. One whose report is not newer than the last applied here changes
    /// nothing. Returns whether the state changed.
    public mutating func adopt(
        state next: CaptureState, since: Date, seq: UInt64?, observedAt: Date?, leaseExpiresAt: Date?
    ) -> Bool {
        if let seq, let lastSeq, seq <= lastSeq { return false }
        if let seq { lastSeq = seq }
        self.observedAt = observedAt
        self.leaseExpiresAt = leaseExpiresAt
        guard next != state else { return false }
        state = next
        self.since = since
        return true
    }

    private mutating func move(
        to next: CaptureState, reason: String, now: Date, seq: UInt64?, observedAt: Date?
    ) -> CaptureChange? {
        guard next != state else { return nil }
        let change = CaptureChange(
            state: next, previous: state, reason: reason, since: now, seq: seq, observedAt: observedAt)
        state = next
        since = now
        return change
    }
}
