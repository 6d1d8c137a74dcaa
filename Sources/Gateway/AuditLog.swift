import FoundationEssentials
import Store
import Synchronization
import ThreadSupport

/// The audit trail of grants and refusals, written to the store in batches by a thread of its own so
/// the key path never waits for SQLite.
///
/// Decisions about a valid token (grants, and refusals such as a revoked session) are kept one record
/// each. Refusals that carried no valid token are only counted, per minute, reason and client
/// address, so a flood of them costs a row a minute per address rather than a row a request.
///
/// Memory is bounded whatever the disk does: at most `capacity` records wait (the oldest are dropped,
/// and counted, when more arrive), and refusals are counted for at most `countCapacity` addresses a
/// minute (further addresses share that minute's `*` count), so a flood from many addresses is still a
/// bounded number of rows. A failed write keeps the batch for the next attempt within those bounds, marks the
/// log failing (the gateway reports itself not ready) and logs one line; the next successful write
/// logs one more. The same thread prunes records older than `retention`.
///
/// The writer runs every `interval`, and at once when `batchSize` records wait: at a high request rate
/// each write stays small, so the store's work for it (on PostgreSQL a database backend process, which
/// the scheduler weighs as a peer of the whole gateway) comes in short pieces, not bursts that take a
/// core from the HTTP threads for tens of milliseconds.
final class AuditLog: Sendable {
    struct CountKey: Hashable {
        let minute: Int64
        let reason: String
        let remote: String
    }

    struct Pending {
        var records: [AuditRecord] = []
        var counts: [CountKey: Int] = [:]
        /// The minute being counted and the addresses counted in it so far (kept across flushes).
        var minute: Int64 = 0
        var addresses: Set<String> = []
    }

    /// What one flush takes from the queue.
    struct Batch {
        let records: [AuditRecord]
        let counts: [CountKey: Int]
    }

    struct Health {
        /// Why the last write failed; nil when it succeeded.
        var failure: String?
        var dropped = 0
        var lastPrune = Date.distantPast
    }

    private let writer: any AuditWriting
    private let capacity: Int
    private let batchSize: Int
    private let countCapacity: Int
    private let retention: TimeInterval
    private let clock: any GatewayClock
    private let log: @Sendable (String) -> Void
    private let pending = Mutex(Pending())
    private let health = Mutex(Health())
    private let thread: PeriodicThread
    /// Serialises flushes, so records reach the store in order.
    private let flushing = Mutex(())

    init(
        writer: any AuditWriting, capacity: Int, batchSize: Int, countCapacity: Int, retention: TimeInterval,
        interval: TimeInterval, clock: any GatewayClock, log: @escaping @Sendable (String) -> Void
    ) {
        self.writer = writer
        self.capacity = max(1, capacity)
        self.batchSize = max(1, batchSize)
        self.countCapacity = max(1, countCapacity)
        self.retention = retention
        self.clock = clock
        self.log = log
        thread = PeriodicThread(name: "audit-writer", interval: interval)
    }

    /// Queues a record; when `capacity` records already wait, the oldest go to make room. The record
    /// that makes `batchSize` starts the writer.
    func record(_ record: AuditRecord) {
        let (dropped, full) = pending.withLock { pending in
            pending.records.append(record)
            return (Self.trim(&pending.records, to: capacity), pending.records.count == batchSize)
        }
        if full { thread.tickSoon() }
        if dropped > 0 { health.withLock { $0.dropped += dropped } }
    }

    /// Counts one refusal that carried no valid token.
    func count(reason: String, remote: String, at date: Date) {
        let minute = Int64((date.timeIntervalSince1970 / 60).rounded(.down))
        pending.withLock { pending in
            if minute > pending.minute {
                pending.minute = minute
                pending.addresses.removeAll(keepingCapacity: true)
            }
            var address = remote
            if !pending.addresses.contains(remote) {
                if pending.addresses.count < countCapacity {
                    pending.addresses.insert(remote)
                } else {
                    address = "*"
                }
            }
            pending.counts[CountKey(minute: minute, reason: reason, remote: address), default: 0] += 1
        }
    }

    /// Records waiting to be written.
    var backlog: Int { pending.withLock { $0.records.count } }

    /// Records dropped because the queue was full.
    var dropped: Int { health.withLock { $0.dropped } }

    /// Why the last write to the store failed; nil while writes succeed.
    var failure: String? { health.withLock { $0.failure } }

    /// Writes everything queued now; on a store error what was taken goes back, within the bounds.
    func flush() {
        flushing.withLock { _ in
            let batch = pending.withLock { pending in
                defer {
                    pending.records.removeAll()
                    pending.counts.removeAll()
                }
                return Batch(records: pending.records, counts: pending.counts)
            }
            guard !batch.records.isEmpty || !batch.counts.isEmpty else { return }
            let counts = batch.counts.map { key, count in
                AuditRefusalCount(
                    minute: Date(timeIntervalSince1970: Double(key.minute) * 60), reason: key.reason,
                    remote: key.remote, count: count)
            }
            do {
                try writer.appendAudit(batch.records, refusals: counts)
                let recovered = health.withLock { health in
                    defer { health.failure = nil }
                    return health.failure != nil
                }
                if recovered { log("audit: writing to the store again") }
            } catch {
                restore(batch, after: error)
            }
        }
    }

    /// Puts a batch that could not be written back in front of what queued meanwhile, dropping the
    /// oldest records past the cap; logs only when the log turns failing.
    private func restore(_ batch: Batch, after error: any Error) {
        let dropped = pending.withLock { pending in
            pending.records.insert(contentsOf: batch.records, at: 0)
            // Counts from minutes the store missed pile up only to a bound, past which they merge.
            for (key, count) in batch.counts { Self.add(count, to: key, in: &pending.counts, cap: 4 * countCapacity) }
            return Self.trim(&pending.records, to: capacity)
        }
        let first = health.withLock { health in
            defer {
                // SQLite's text only (such as "database or disk is full"): /readyz shows it to anyone,
                // and the statement is in the log line.
                health.failure = (error as? StoreError)?.message ?? "\(error)"
                health.dropped += dropped
            }
            return health.failure == nil
        }
        if first {
            log(
                "audit: cannot write to the store (\(error)); records wait in memory (at most \(capacity), "
                    + "the oldest dropped beyond) and /readyz answers 503 until a write succeeds")
        }
    }

    /// Deletes records older than the retention period, at most once an hour of the gateway's clock.
    func pruneIfDue() {
        let now = clock.now()
        let due = health.withLock { health in
            guard now.timeIntervalSince(health.lastPrune) >= min(3600, retention / 10) else { return false }
            health.lastPrune = now
            return true
        }
        guard due else { return }
        do { _ = try writer.pruneAudit(before: now.addingTimeInterval(-retention)) } catch {
            log("audit: pruning failed: \(error)")
        }
    }

    func start() {
        thread.start { [self] in
            flush()
            pruneIfDue()
        }
    }

    /// Stops the writer and writes what is left.
    func stop() {
        thread.stop()
        flush()
    }

    /// Drops the oldest records past `capacity`; returns how many. Drops a hundredth of the capacity
    /// at once, so a full queue costs one move per many records rather than one per record.
    private static func trim(_ records: inout [AuditRecord], to capacity: Int) -> Int {
        guard records.count > capacity else { return 0 }
        let excess = min(records.count, records.count - capacity + capacity / 100)
        records.removeFirst(excess)
        return excess
    }

    /// Adds `count` to `key`, or to its minute's `*` address when `cap` counts are already held.
    private static func add(_ count: Int, to key: CountKey, in counts: inout [CountKey: Int], cap: Int) {
        if counts[key] != nil || counts.count < cap {
            counts[key, default: 0] += count
        } else {
            counts[CountKey(minute: key.minute, reason: key.reason, remote: "*"), default: 0] += count
        }
    }
}
