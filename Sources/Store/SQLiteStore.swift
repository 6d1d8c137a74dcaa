import FoundationEssentials
import Glibc
import SystemSupport

/// The store in one SQLite database (WAL mode) under the data directory: the embedded default.
///
/// Lifecycle: `init` creates the directory and database when missing and applies migrations. Each
/// commit is synced (`synchronous = FULL`), so a `kill -9` at any point loses nothing that was
/// committed.
public final class SQLiteStore: SQLStore, @unchecked Sendable {
    /// The database file.
    public let path: String

    /// Opens (creating when missing) `guardplay.db` in `directory`.
    public init(directory: String, kek: KeyEncryptionKey) throws(StoreError) {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreError(operation: "mkdir(\(directory))", message: "\(failureText(error))")
        }
        let path = directory.appendingPathComponent("guardplay.db")
        let database = try SQLiteConnection(path: path)
        try database.execute("PRAGMA busy_timeout = 5000")
        let mode = try database.query("PRAGMA journal_mode = WAL").first?.first?.text
        guard mode?.lowercased() == "wal" else {
            throw StoreError(
                operation: "PRAGMA journal_mode = WAL", message: "the database stayed in \(mode ?? "?") mode")
        }
        try database.execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        try SQLiteMigrations.apply(to: database)
        self.path = path
        super.init(connection: database, kek: kek, dialect: .sqlite)
    }

    public override var location: String { path }

    /// Bytes the database takes on disk: its file and its write-ahead log.
    public override var sizeInBytes: Int {
        [path, path + "-wal"].reduce(0) { total, file in
            var info = stat()
            return total + (stat(file, &info) == 0 ? Int(info.st_size) : 0)
        }
    }

    /// Runs SQLite's own consistency check; "ok" when the database is sound.
    public func integrityCheck() throws(StoreError) -> String {
        try with { database throws(StoreError) in
            try database.query("PRAGMA integrity_check").map { $0.first?.text ?? "" }.joined(separator: "; ")
        }
    }
}
