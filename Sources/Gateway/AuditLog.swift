import Foundation
import Store
import Synchronization
import ThreadSupport

/// The audit trail of grants and refusals, written to the store in batches by a thread of its own so
/// the key path never waits for SQLite. Records queue in memory (bounded); the writer commits them
/// every `interval` in one transaction. When the queue is full, `record` says so and the caller
/// refuses rather than grant unaudited.
final class AuditLog: Sendable {
    private let store: Store
    private let capacity: Int
    private let log: @Sendable (String) -> Void
    private let queue = Mutex([AuditRecord]())
    private let writer: PeriodicThread
    /// Serialises flushes, so records reach the store in order.
    private let flushing = Mutex(())

    init(store: Store, capacity: Int, interval: TimeInterval, log: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.capacity = capacity
        self.log = log
        writer = PeriodicThread(name: "audit-writer", interval: interval)
    }

    /// Queues a record; false when the queue is full.
    func record(_ record: AuditRecord) -> Bool {
        queue.withLock { queue in
            guard queue.count < capacity else { return false }
            queue.append(record)
            return true
        }
    }

    /// Records waiting to be written.
    var backlog: Int { queue.withLock { $0.count } }

    /// Writes everything queued now; on a store error the records go back to the front of the queue.
    func flush() {
        flushing.withLock { _ in
            let batch = queue.withLock { queue in
                defer { queue.removeAll(keepingCapacity: true) }
                return queue
            }
            guard !batch.isEmpty else { return }
            do { try store.appendAudit(batch) } catch {
                log("audit: \(error); \(batch.count) records kept for the next attempt")
                queue.withLock { $0.insert(contentsOf: batch, at: 0) }
            }
        }
    }

    func start() { writer.start { [self] in flush() } }

    /// Stops the writer and writes what is left.
    func stop() {
        writer.stop()
        flush()
    }
}
