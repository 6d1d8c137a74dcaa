import CaptureMonitor
import FoundationEssentials
public import Store
import Synchronization

/// A session as the gateway holds it: its record and its capture state.
public struct SessionSnapshot: Sendable, Equatable {
    /// The stored record.
    public let record: SessionRecord
    /// The capture state and lease.
    public let capture: CaptureSnapshot
}

/// Playback sessions in memory, backed by the store: creation and revocation are written through.
/// On SQLite capture state lives only here (after a restart every session is `unknown` until it
/// reports); on a shared store a node that first sees a session (at its start, or when a request
/// names one another node created) takes its state from the session's newest stored capture report
/// while that report's lease holds by the database's clock, and starts it `unknown` otherwise.
public final class SessionRegistry: Sendable {
    struct Entry {
        var record: SessionRecord
        var lease: CaptureLease
        var leaseReason: String
    }

    private let entries = Mutex([String: Entry]())
    private let store: any Store
    private let hub: SessionEventHub
    private let clock: any GatewayClock
    private let leaseDuration: TimeInterval
    private let log: @Sendable (String) -> Void
    /// This node's name in the session events it writes to a shared store.
    let node = Identifier.random(prefix: "node_")
    /// The stored session events this node has applied.
    private let eventCursor = Mutex(EventCursor(after: 0))

    init(
        store: any Store, hub: SessionEventHub, clock: any GatewayClock, leaseDuration: TimeInterval,
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
        let latest = try store.latestSessionEventSeq()
        let window = EventCursor.startWindow
        let recent = try store.sessionEvents(after: max(0, latest - window), orAmong: [], limit: Int(window)).map(\.seq)
        eventCursor.withLock { $0 = EventCursor(startingAt: latest, recent: recent, window: window, at: now) }
        let records = try store.sessions(unexpiredAt: now)
        let captures = try store.liveCaptureEvents(session: nil)
        entries.withLock { entries in
            for record in records {
                entries[record.id] = Entry(
                    record: record, lease: CaptureLease(leaseDuration: leaseDuration, start: now),
                    leaseReason: "session-start")
            }
            for event in captures { Self.adopt(event, into: &entries) }
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
        if changed {
            let eventID = share(SessionEventRecord(sessionID: id, kind: .revoked, at: now, origin: node))
            hub.publish(session: id, .revoked(at: now), id: eventID)
        }
        return changed
    }

    /// The session with `id`, or nil. One this node does not hold (another node sharing the store
    /// created it) is read from the store once and held from then on, in the capture state of its
    /// newest stored report whose lease holds, `unknown` when there is none.
    public func session(_ id: String) -> SessionSnapshot? {
        if let held = entries.withLock({ entries in entries[id].map(Self.snapshot) }) { return held }
        guard store.isShared, Identifier.isValid(id), let record = try? store.session(id) else { return nil }
        let now = clock.now()
        guard record.expiresAt > now else { return nil }
        entries.withLock { entries in
            if entries[id] == nil {
                entries[id] = Entry(
                    record: record, lease: CaptureLease(leaseDuration: leaseDuration, start: now),
                    leaseReason: "session-start")
            }
        }
        // Read after the entry is held, so a report stored meanwhile is either read here or applied
        // by `applyStoredEvents`; the older of the two changes nothing.
        let captures = (try? store.liveCaptureEvents(session: id)) ?? []
        return entries.withLock { entries in
            for event in captures { Self.adopt(event, into: &entries) }
            return entries[id].map(Self.snapshot)
        }
    }

    /// Gives the held session of `event` the capture state and lease of that stored report, unless a
    /// newer report was applied; true when its state changed.
    @discardableResult
    private static func adopt(_ event: SessionEventRecord, into entries: inout [String: Entry]) -> Bool {
        guard var entry = entries[event.sessionID],
            let state = event.state.flatMap(CaptureState.init(rawValue:))
        else { return false }
        let changed = entry.lease.adopt(
            state: state, since: event.since ?? event.at, seq: event.reportSeq.map { UInt64(clamping: $0) },
            observedAt: event.observedAt, leaseExpiresAt: event.leaseExpiresAt)
        if changed { entry.leaseReason = event.reason ?? "reported" }
        entries[event.sessionID] = entry
        return changed
    }

    /// Applies a capture report and publishes any change.
    func reportCapture(
        session id: String, capturing: Bool, seq: UInt64, observedAt: Date
    ) -> (CaptureReportOutcome, SessionSnapshot)? {
        // On a shared store, another node may have taken the session's last report a moment ago: its
        // state is read first, so that whether this report changes the state (and is announced to
        // event streams) is judged against it and not against what this node last heard.
        if store.isShared { applyStoredEvents() }
        let now = clock.now()
        let result = entries.withLock { entries -> (CaptureReportOutcome, SessionSnapshot)? in
            guard var entry = entries[id] else { return nil }
            let outcome = entry.lease.report(capturing: capturing, seq: seq, observedAt: observedAt, now: now)
            if case .applied(let change) = outcome, change != nil { entry.leaseReason = "reported" }
            entries[id] = entry
            return (outcome, Self.snapshot(entry))
        }
        if let (outcome, snapshot) = result, case .applied(let change) = outcome {
            let capture = snapshot.capture
            // Every applied report is shared, since it renews the lease on the other nodes too; only a
            // change is announced to event streams.
            let eventID = share(
                SessionEventRecord(
                    sessionID: id, kind: .capture, state: capture.state.rawValue, reason: capture.reason,
                    since: capture.since, reportSeq: capture.seq.map { Int64(clamping: $0) },
                    observedAt: capture.observedAt, leaseExpiresAt: capture.leaseExpiresAt, at: now, origin: node,
                    announced: change != nil))
            if change != nil { hub.publish(session: id, .captureState(capture), id: eventID) }
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

    /// Writes `event` (for a resumed stream, and for the other nodes sharing the store) and returns its
    /// number in the session, the ID event streams give it; a failure is logged (the event then has no
    /// ID), and this node goes on with the change applied in its own memory. A report that only renews
    /// the lease is written only to a shared store: no stream replays it, and only other nodes need it.
    private func share(_ event: SessionEventRecord) -> Int64? {
        guard store.isShared || event.announced else { return nil }
        do { return try store.appendSessionEvent(event) } catch {
            log("store: session event for \(event.sessionID): \(error)")
            return nil
        }
    }

    /// The announced events of session `id` after its event `eventID`, oldest first, each with its
    /// event ID: what a stream resumed with `Last-Event-ID` missed, on any node.
    public func storedEvents(session id: String, after eventID: Int64) throws(GatewayError) -> [(SessionEvent, Int64)] {
        var replay: [(SessionEvent, Int64)] = []
        var cursor = eventID
        while true {
            let page = try stored(log) { () throws(StoreError) in
                try store.sessionEvents(session: id, after: cursor, limit: 500)
            }
            for record in page { if let event = Self.event(record) { replay.append((event, record.sessionSeq)) } }
            guard let last = page.last, page.count == 500 else { return replay }
            cursor = last.sessionSeq
        }
    }

    /// A stored event as streams show it: a revocation, or the capture state the report left.
    private static func event(_ record: SessionEventRecord) -> SessionEvent? {
        switch record.kind {
        case .revoked: return .revoked(at: record.at)
        case .capture:
            guard let state = record.state.flatMap(CaptureState.init(rawValue:)) else { return nil }
            return .captureState(
                CaptureSnapshot(
                    state: state, reason: record.reason ?? "reported", since: record.since ?? record.at,
                    seq: record.reportSeq.map { UInt64(clamping: $0) }, observedAt: record.observedAt,
                    leaseExpiresAt: record.leaseExpiresAt))
        }
    }

    /// Applies the session events other nodes stored since the last call: a revocation ends the
    /// session here too, a capture report sets its state and lease as on the node that took it. Each
    /// change is published to this node's event streams, in the order the events were read.
    func applyStoredEvents() {
        eventCursor.withLock { cursor in
            while true {
                let events: [SessionEventRecord]
                do { events = try store.sessionEvents(after: cursor.newest, orAmong: cursor.missing, limit: 500) } catch
                {
                    log("store: session events: \(error)")
                    return
                }
                let now = clock.now()
                for event in events where cursor.admit(event.seq, at: now) && event.origin != node { apply(event) }
                if events.count < 500 { break }
            }
            cursor.expire(at: clock.now())
        }
    }

    private func apply(_ event: SessionEventRecord) {
        let id = event.sessionID
        switch event.kind {
        case .revoked:
            let changed = entries.withLock { entries -> Bool in
                guard entries[id] != nil, entries[id]?.record.revokedAt == nil else { return false }
                entries[id]?.record.revokedAt = event.at
                return true
            }
            if changed { hub.publish(session: id, .revoked(at: event.at), id: event.sessionSeq) }
        case .capture:
            let snapshot = entries.withLock { entries -> SessionSnapshot? in
                Self.adopt(event, into: &entries) ? entries[id].map(Self.snapshot) : nil
            }
            if let snapshot {
                hub.publish(session: id, .captureState(snapshot.capture), id: event.announced ? event.sessionSeq : nil)
            }
        }
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
