/// A store failure: the operation that failed, SQLite's result code and its own text
/// (`sqlite3_errmsg`, or `sqlite3_errstr` when there is no connection), or GuardPlay's reason.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call and statement, such as `sqlite3_step(INSERT INTO sessions …)`.
    public let operation: String
    /// SQLite's extended result code, or 0 for errors that are not SQLite's.
    public let code: Int32
    /// SQLite's text, or GuardPlay's reason.
    public let message: String

    /// A failure with its operation, code and text.
    public init(operation: String, code: Int32 = 0, message: String) {
        self.operation = operation
        self.code = code
        self.message = message
    }

    public var description: String {
        code == 0 ? "\(operation): \(message)" : "\(operation): \(message) (\(code))"
    }
}
