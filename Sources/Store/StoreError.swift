/// A store failure: the operation that failed, the database's code and its own text
/// (`sqlite3_errmsg`, or `sqlite3_errstr` when there is no connection; `PQerrorMessage` or
/// `PQresultErrorMessage` with its SQLSTATE), or GuardPlay's reason.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call and statement, such as `sqlite3_step(INSERT INTO sessions …)`.
    public let operation: String
    /// SQLite's extended result code, or 0 for errors that are not SQLite's.
    public let code: Int32
    /// The database's text, or GuardPlay's reason.
    public let message: String
    /// True when the database could not be reached (a PostgreSQL connection lost or refused): the
    /// request may succeed once it is back, so callers answer 503 rather than 500.
    public let isUnavailable: Bool

    /// A failure with its operation, code and text.
    public init(operation: String, code: Int32 = 0, message: String, isUnavailable: Bool = false) {
        self.operation = operation
        self.code = code
        self.message = message
        self.isUnavailable = isUnavailable
    }

    public var description: String {
        code == 0 ? "\(operation): \(message)" : "\(operation): \(message) (\(code))"
    }
}
