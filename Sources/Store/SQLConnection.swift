/// What the shared repositories need of a connection; `SQLiteConnection` and `PostgresConnection`
/// provide it. `?` placeholders are numbered in order.
protocol SQLConnection: AnyObject {
    /// Runs one or more statements that take no parameters.
    func execute(_ sql: String) throws(StoreError)
    /// Runs `sql` with `values` bound in order and returns every row.
    @discardableResult
    func query(_ sql: String, _ values: [SQLValue]) throws(StoreError) -> [[SQLValue]]
    /// Runs `sql` once per element of `rows`.
    func execute(_ sql: String, rows: [[SQLValue]]) throws(StoreError)
    /// Appends `rows` to `table`, each row one value per name in `columns`: one statement for the
    /// whole batch on PostgreSQL (`COPY … FROM STDIN`), one prepared `INSERT` reused per row on SQLite.
    func append(into table: String, columns: [String], rows: [[SQLValue]]) throws(StoreError)
    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { get }
    /// Runs `body` in a transaction, rolling back when it throws.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T
}

extension SQLConnection {
    /// Runs `sql`, which takes no parameters, and returns every row.
    @discardableResult
    func query(_ sql: String) throws(StoreError) -> [[SQLValue]] { try query(sql, []) }
}

extension SQLiteConnection: SQLConnection {}

/// Where the two databases' SQL differs.
enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// The schema version the database is at: `PRAGMA user_version` for SQLite, the
    /// `guardplay_schema` row for PostgreSQL.
    func schemaVersion(_ database: any SQLConnection) throws(StoreError) -> Int {
        switch self {
        case .sqlite: Int(try database.query("PRAGMA user_version").first?.first?.integer ?? 0)
        case .postgres:
            Int(try database.query("SELECT coalesce(max(version), 0) FROM guardplay_schema").first?.first?.integer ?? 0)
        }
    }
}
