import CaptureMonitor
import Foundation
public import Store
import Synchronization

/// A session as the gateway holds it: its record and its capture state.
public struct SessionSnapshot: Sendable, Equatable {
    /// The stored record.
    public let record: SessionRecord
    /// The capture state and lease.
    public let capture: CaptureSnapshot
}

/// Playback sessions in memory, backed by the store: creation and revocation are written through;
/// capture state lives only here (after a restart every session is `unknown` until it reports).
public final class SessionRegistry: Sendable {
    struct Entry {
        var record: SessionRecord
        var lease: CaptureLease
        var leaseReason: String
    }

    private let entries = Mutex([String: Entry]())
    private let store: Store
    private let hub: SessionEventHub
    private let clock: any GatewayClock
    private let leaseDuration: TimeInterval
    private let log: @Sendable (String) -> Void

    init(
        store: Store, hub: SessionEventHub, clock: any GatewayClock, leaseDuration: TimeInterval,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.hub = hub
        self.clock = clock
        self.leaseDuration = leaseDuration
        self.log = log
    }

    /// Loads the unexpired sessions from the store.
    func load() throws(StoreError) {
        let now = clock.now()
        let records = try store.sessions(unexpiredAt: now)
        entries.withLock { entries in
            for record in records {
                entries[record.id] = Entry(
                    record: record, lease: CaptureLease(leaseDuration: leaseDuration, start: now),
                    leaseReason: "session-start")
            }
        }
    }

    /// Creates and stores a session for `asset` that lasts `ttl` seconds.
    func create(asset: String, ttl: TimeInterval) throws(GatewayError) -> SessionRecord {
        let now = clock.now()
        let expiry = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + ttl).rounded(.down))
        let record = SessionRecord(
            id: Identifier.random(prefix: "ses_"), assetID: asset, createdAt: now, expiresAt: expiry)
        try stored(log) { () throws(StoreError) in try store.insertSession(record) }
        entries.withLock { entries in
            entries[record.id] = Entry(
                record: record, lease: CaptureLease(leaseDuration: leaseDuration, start: now),
                leaseReason: "session-start")
        }
        return record
    }

    /// Revokes a session and tells its subscribers; false when it is unknown or already revoked.
    func revoke(_ id: String) throws(GatewayError) -> Bool {
        let now = clock.now()
        guard entries.withLock({ $0[id].map { $0.record.revokedAt == nil } ?? false }) else { return false }
        let changed = try stored(log) { () throws(StoreError) in try store.revokeSession(id, at: now) }
        entries.withLock { $0[id]?.record.revokedAt = now }
        if changed { hub.publish(session: id, .revoked(at: now)) }
        return changed
    }

    /// The session with `id`, or nil.
    public func session(_ id: String) -> SessionSnapshot? {
        entries.withLock { entries in entries[id].map(Self.snapshot) }
    }

    /// Applies a capture report and publishes any change.
    func reportCapture(
        session id: String, capturing: Bool, seq: UInt64, observedAt: Date
    ) -> (CaptureReportOutcome, SessionSnapshot)? {
        let now = clock.now()
        let result = entries.withLock { entries -> (CaptureReportOutcome, SessionSnapshot)? in
            guard var entry = entries[id] else { return nil }
            let outcome = entry.lease.report(capturing: capturing, seq: seq, observedAt: observedAt, now: now)
            if case .applied(let change) = outcome, change != nil { entry.leaseReason = "reported" }
            entries[id] = entry
            return (outcome, Self.snapshot(entry))
        }
        if let (outcome, snapshot) = result, case .applied(change: .some) = outcome {
            hub.publish(session: id, .captureState(snapshot.capture))
        }
        return result
    }

    /// Lets lapsed leases turn their sessions `unknown`, publishing each change, and forgets sessions
    /// that have expired.
    func sweep() {
        let now = clock.now()
        let lapsed = entries.withLock { entries -> [(String, CaptureSnapshot)] in
            var lapsed: [(String, CaptureSnapshot)] = []
            for (id, entry) in entries {
                if entry.record.expiresAt <= now {
                    entries[id] = nil
                    continue
                }
                guard entry.lease.leaseExpiresAt.map({ $0 <= now }) == true else { continue }
                var updated = entry
                if updated.lease.expire(now: now) != nil {
                    updated.leaseReason = "lease-lapsed"
                    lapsed.append((id, Self.snapshot(updated).capture))
                }
                entries[id] = updated
            }
            return lapsed
        }
        for (id, capture) in lapsed { hub.publish(session: id, .captureState(capture)) }
    }

    /// Sessions held in memory.
    var count: Int { entries.withLock { $0.count } }

    /// Sessions per capture state, for metrics.
    func countByCaptureState() -> [CaptureState: Int] {
        entries.withLock { entries in
            var counts: [CaptureState: Int] = [:]
            for entry in entries.values where entry.record.revokedAt == nil {
                counts[entry.lease.state, default: 0] += 1
            }
            return counts
        }
    }

    private static func snapshot(_ entry: Entry) -> SessionSnapshot {
        SessionSnapshot(
            record: entry.record,
            capture: CaptureSnapshot(
                state: entry.lease.state, reason: entry.leaseReason, since: entry.lease.since, seq: entry.lease.lastSeq,
                observedAt: entry.lease.observedAt, leaseExpiresAt: entry.lease.leaseExpiresAt))
    }
}
