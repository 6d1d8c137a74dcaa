internal import CSQLite
import FoundationEssentials

/// Owner of one `sqlite3` connection (`sqlite3_open_v2`, closed with `sqlite3_close_v2` in `deinit`),
/// with its prepared statements cached by SQL text.
///
/// Not Sendable on purpose: a connection has one owner at a time; the store keeps it behind a mutex.
final class SQLiteConnection {
    private let handle: OpaquePointer
    private var statements: [String: Statement] = [:]
    let path: String

    /// Opens (creating if needed) the database at `path`.
    init(path: String) throws(StoreError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            if let handle { sqlite3_close_v2(handle) }
            throw StoreError(operation: "sqlite3_open_v2(\(path))", code: status, message: message)
        }
        self.handle = handle
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows (`sqlite3_exec`).
    func execute(_ sql: String) throws(StoreError) {
        var errorText: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &errorText)
        if status != SQLITE_OK {
            let message = errorText.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errorText)
            throw StoreError(operation: "sqlite3_exec(\(summary(sql)))", code: status, message: message)
        }
    }

    /// Runs `sql` with `values` bound in order and returns every row.
    @discardableResult
    func query(_ sql: String, _ values: [SQLValue] = []) throws(StoreError) -> [[SQLValue]] {
        let statement = try prepare(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var rows: [[SQLValue]] = []
        while try statement.step() { rows.append(statement.row()) }
        return rows
    }

    /// Runs `sql` once per element of `rows`, each with its values bound, reusing one prepared statement.
    func execute(_ sql: String, rows: [[SQLValue]]) throws(StoreError) {
        let statement = try prepare(sql)
        for values in rows {
            defer { statement.reset() }
            try statement.bind(values)
            _ = try statement.step()
        }
    }

    /// Appends `rows` to `table` with one prepared `INSERT` reused for every row (inside the caller's
    /// transaction, a batch is one write to the database file).
    func append(into table: String, columns: [String], rows: [[SQLValue]]) throws(StoreError) {
        let marks = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        try execute("INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(marks))", rows: rows)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE (`sqlite3_changes`).
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func prepare(_ sql: String) throws(StoreError) -> Statement {
        if let cached = statements[sql] { return cached }
        var pointer: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard status == SQLITE_OK, let pointer else {
            throw error("sqlite3_prepare_v3(\(summary(sql)))", status)
        }
        let statement = Statement(pointer, sql: sql, connection: self)
        statements[sql] = statement
        return statement
    }

    fileprivate func error(_ operation: String, _ status: Int32) -> StoreError {
        StoreError(operation: operation, code: status, message: String(cString: sqlite3_errmsg(handle)))
    }
}

@available(*, unavailable, message: "an SQLite connection has one owner at a time")
extension SQLiteConnection: Sendable {}

/// Owner of one prepared statement (`sqlite3_prepare_v3`, finalized with `sqlite3_finalize` in `deinit`).
final class Statement {
    private let pointer: OpaquePointer
    private let sql: String
    private unowned let connection: SQLiteConnection

    fileprivate init(_ pointer: OpaquePointer, sql: String, connection: SQLiteConnection) {
        self.pointer = pointer
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(pointer) }

    func bind(_ values: [SQLValue]) throws(StoreError) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(pointer, index)
            case .integer(let number): status = sqlite3_bind_int64(pointer, index, number)
            case .real(let number): status = sqlite3_bind_double(pointer, index, number)
            case .text(let text): status = sqlite3_bind_text(pointer, index, text, -1, csqlite_transient())
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { raw in
                    sqlite3_bind_blob(pointer, index, raw.baseAddress, Int32(raw.count), csqlite_transient())
                }
            }
            guard status == SQLITE_OK else { throw connection.error("sqlite3_bind(\(summary(sql)))", status) }
        }
    }

    /// Advances to the next row; false when there are no more.
    func step() throws(StoreError) -> Bool {
        let status = sqlite3_step(pointer)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error("sqlite3_step(\(summary(sql)))", status)
        }
    }

    /// The current row's columns.
    func row() -> [SQLValue] {
        (0..<sqlite3_column_count(pointer)).map { column in
            switch sqlite3_column_type(pointer, column) {
            case SQLITE_INTEGER: .integer(sqlite3_column_int64(pointer, column))
            case SQLITE_FLOAT: .real(sqlite3_column_double(pointer, column))
            case SQLITE_TEXT: .text(String(cString: sqlite3_column_text(pointer, column)))
            case SQLITE_BLOB:
                .blob(
                    Array(
                        UnsafeRawBufferPointer(
                            start: sqlite3_column_blob(pointer, column),
                            count: Int(sqlite3_column_bytes(pointer, column)))))
            default: .null
            }
        }
    }

    /// Clears bindings and rewinds (`sqlite3_reset`, `sqlite3_clear_bindings`) for the next use.
    func reset() {
        sqlite3_reset(pointer)
        sqlite3_clear_bindings(pointer)
    }
}
