import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import SystemSupport

/// The store in one PostgreSQL database that several gateway nodes share, over libpq.
///
/// Lifecycle: `init` connects, applies migrations and checks the KEK against the database's check
/// value (written by the first node), so a node with another KEK refuses to start instead of
/// failing on every key. A lost connection is reopened by the next call; until then calls throw
/// errors with `isUnavailable` set.
public final class PostgresStore: SQLStore, @unchecked Sendable {
    private let url: String

    /// Connects to the database at `url` (`postgres://…` or `postgresql://…`).
    public init(url: String, kek: KeyEncryptionKey) throws(StoreError) {
        let connection = try PostgresConnection(url: url)
        try PostgresMigrations.apply(to: connection)
        try Self.checkKEK(kek, in: connection)
        self.url = url
        super.init(connection: connection, kek: kek, dialect: .postgres)
    }

    /// Writes this KEK's check value when the database has none, and refuses a database whose check
    /// value another KEK wrote. The value is an HMAC under the KEK, which reveals nothing of it.
    private static func checkKEK(_ kek: KeyEncryptionKey, in connection: PostgresConnection) throws(StoreError) {
        let value = kek.derivedKey(for: "guardplay/kek-check/v1")
        try connection.query(
            "INSERT INTO guardplay_kek_check (id, value) VALUES (1, ?) ON CONFLICT (id) DO NOTHING", [.blob(value)])
        let stored = try connection.query("SELECT value FROM guardplay_kek_check WHERE id = 1").first?.first?.blob
        guard stored == value else {
            throw StoreError(
                operation: "KeyEncryptionKey(\(connection.location))",
                message: "this node's key-encryption key is not the one the database's keys are wrapped under; "
                    + "every node must use the same GUARDPLAY_KEK or KEK file")
        }
    }

    public override var location: String { PostgresConnection.redacted(url) }

    /// Bytes the database takes (`pg_database_size`); 0 while it cannot be reached.
    public override var sizeInBytes: Int {
        let size = try? with { database throws(StoreError) in
            try database.query("SELECT pg_database_size(current_database())").first?.first?.integer
        }
        return Int((size ?? nil) ?? 0)
    }

    /// Listens for session events on a connection of its own, reconnecting by itself.
    public override func listen(_ onNotify: @escaping @Sendable () -> Void) -> StoreListener? {
        PostgresListener(url: url, channel: Self.eventChannel, onNotify: onNotify) { [weak self] reachable in
            self?.setReachable(reachable)
        }
    }
}

/// A thread holding one connection that LISTENs to a channel and calls `onNotify` for each batch
/// of notifications, and once after every (re)connection, since notifications sent while no
/// connection listened are gone. While the server cannot be reached it retries every half second.
final class PostgresListener: StoreListener {
    private let stopped = Mutex(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Listens on `url`; `onReachability` hears each connection made (true) or lost or refused (false).
    init(
        url: String, channel: String, onNotify: @escaping @Sendable () -> Void,
        onReachability: @escaping @Sendable (Bool) -> Void
    ) {
        // The thread holds the listener until `stop` ends it.
        startThread(name: "store-listener") {
            self.run(url: url, channel: channel, onNotify: onNotify, onReachability: onReachability)
        }
    }

    private var isStopped: Bool { stopped.withLock { $0 } }

    private func run(
        url: String, channel: String, onNotify: @Sendable () -> Void, onReachability: @Sendable (Bool) -> Void
    ) {
        defer { finished.signal() }
        while !isStopped {
            do {
                let connection = try PostgresConnection(url: url)
                try connection.execute("LISTEN \(channel)")
                onReachability(true)
                onNotify()
                while !isStopped {
                    if try connection.waitForNotifications(timeout: 0.2) > 0 { onNotify() }
                }
            } catch {
                onReachability(false)
                if !isStopped { usleep(500_000) }
            }
        }
    }

    func stop() {
        let already = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        if !already { finished.wait() }
    }
}
