internal import CLibPQ
import Crypto
import FoundationEssentials
import Glibc
import SystemSupport

/// Owner of one libpq connection (`PQconnectdb`, closed with `PQfinish` in `deinit`). A lost
/// connection is reopened (`PQreset`) by the next call; until the server answers again every call
/// throws a `StoreError` with `isUnavailable` set.
///
/// Not Sendable on purpose: a connection has one owner at a time; the store keeps it behind a mutex.
final class PostgresConnection {
    private let handle: OpaquePointer
    /// The connection string without its password, for messages.
    let location: String
    /// Rows changed by the last command (`PQcmdTuples`).
    private(set) var changes = 0
    /// Round trips to the server so far: one per statement, one per pipeline of statements.
    private(set) var roundTrips = 0

    /// Connects to `url`, a `postgres://` or `postgresql://` URI or a libpq key/value string.
    init(url: String) throws(StoreError) {
        location = Self.redacted(url)
        // A node must not hang on a database that does not answer: the connect is bounded (unless
        // the URL says otherwise, since it comes later and overrides) and so is each statement.
        let keywords: [UnsafeMutablePointer<CChar>?] = [strdup("connect_timeout"), strdup("dbname"), nil]
        let values: [UnsafeMutablePointer<CChar>?] = [strdup("3"), strdup(url), nil]
        defer { for pointer in keywords + values { free(pointer) } }
        let opened = keywords.withUnsafeBufferPointer { keywordBuffer in
            values.withUnsafeBufferPointer { valueBuffer in
                keywordBuffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { keywordPointers in
                    valueBuffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { valuePointers in
                        PQconnectdbParams(keywordPointers.baseAddress, valuePointers.baseAddress, 1)
                    }
                }
            }
        }
        guard let handle = opened else {
            throw StoreError(operation: "PQconnectdb(\(location))", message: "out of memory", isUnavailable: true)
        }
        self.handle = handle
        guard PQstatus(handle) == CONNECTION_OK else {
            throw StoreError(
                operation: "PQconnectdb(\(location))", message: Self.text(PQerrorMessage(handle)),
                isUnavailable: true)
        }
        try execute("SET client_min_messages = warning; SET statement_timeout = '10s'")
    }

    deinit { PQfinish(handle) }

    /// Whether the connection is up (`PQstatus`).
    var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Reopens a lost connection (`PQreset`); throws while the server cannot be reached.
    func reconnectIfNeeded() throws(StoreError) {
        guard !isConnected else { return }
        PQreset(handle)
        guard isConnected else {
            throw StoreError(
                operation: "PQreset(\(location))", message: Self.text(PQerrorMessage(handle)), isUnavailable: true)
        }
        try execute("SET client_min_messages = warning; SET statement_timeout = '10s'")
    }

    /// Runs one or more statements that take no parameters (`PQexec`).
    func execute(_ sql: String) throws(StoreError) {
        try reconnectIfNeeded()
        roundTrips += 1
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        _ = try check(result, operation: "PQexec(\(summary(sql)))")
    }

    /// Runs `sql` with `values` bound to its `?` placeholders in order (numbered `$1…` for the server)
    /// and returns every row (`PQexecParams`, text results).
    @discardableResult
    func query(_ sql: String, _ values: [SQLValue] = []) throws(StoreError) -> [[SQLValue]] {
        try reconnectIfNeeded()
        roundTrips += 1
        let numbered = Self.numbered(sql)
        let result = Self.withParameters(values) { pointers, lengths, formats in
            PQexecParams(handle, numbered, Int32(values.count), nil, pointers, lengths, formats, 0)
        }
        defer { PQclear(result) }
        guard let result = try check(result, operation: "PQexecParams(\(summary(sql)))") else { return [] }
        changes = Int(String(cString: PQcmdTuples(result))) ?? 0
        let columns = PQnfields(result)
        return (0..<PQntuples(result)).map { row in
            (0..<columns).map { column in Self.value(result, row: row, column: column) }
        }
    }

    /// Waits up to `timeout` seconds for notifications on the channels this connection LISTENs to
    /// (`poll` on `PQsocket`, then `PQconsumeInput` and `PQnotifies`); returns how many arrived.
    /// Throws when the connection is lost.
    func waitForNotifications(timeout: Double) throws(StoreError) -> Int {
        let socket = PQsocket(handle)
        guard socket >= 0, isConnected else {
            throw StoreError(operation: "PQsocket(\(location))", message: "no connection", isUnavailable: true)
        }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(timeout * 1000))
        if ready > 0 {
            guard PQconsumeInput(handle) == 1 else {
                throw StoreError(
                    operation: "PQconsumeInput(\(location))", message: Self.text(PQerrorMessage(handle)),
                    isUnavailable: true)
            }
        }
        var count = 0
        while let notification = PQnotifies(handle) {
            // PQnotifies hands over the struct; PQfreemem frees it with its strings.
            PQfreemem(notification)
            count += 1
        }
        guard isConnected else {
            throw StoreError(operation: "PQconsumeInput(\(location))", message: "connection lost", isUnavailable: true)
        }
        return count
    }

    /// Runs `sql` once per element of `rows`, each with its values bound, in pipeline mode
    /// (`PQenterPipelineMode`, `PQsendQueryParams` per row, `PQpipelineSync`, then `PQgetResult` for
    /// each): one round trip per `pipelineDepth` rows instead of one per row. Inside a transaction the
    /// rows are part of it; outside one, each pipeline is a transaction of its own. The first failure
    /// is thrown; the statements after it are skipped by the server.
    func execute(_ sql: String, rows: [[SQLValue]]) throws(StoreError) {
        guard rows.count > 1 else {
            for values in rows { try query(sql, values) }
            return
        }
        try reconnectIfNeeded()
        let numbered = Self.numbered(sql)
        let operation = "pipeline(\(summary(sql)))"
        guard PQenterPipelineMode(handle) == 1 else {
            throw StoreError(operation: "PQenterPipelineMode", message: Self.text(PQerrorMessage(handle)))
        }
        defer { PQexitPipelineMode(handle) }
        var start = 0
        while start < rows.count {
            let slice = rows[start..<min(start + Self.pipelineDepth, rows.count)]
            start += slice.count
            roundTrips += 1
            for values in slice {
                let sent = Self.withParameters(values) { pointers, lengths, formats in
                    PQsendQueryParams(handle, numbered, Int32(values.count), nil, pointers, lengths, formats, 0)
                }
                guard sent == 1 else {
                    throw StoreError(
                        operation: "PQsendQueryParams(\(summary(sql)))", message: Self.text(PQerrorMessage(handle)),
                        isUnavailable: !isConnected)
                }
            }
            guard PQpipelineSync(handle) == 1 else {
                throw StoreError(
                    operation: "PQpipelineSync", message: Self.text(PQerrorMessage(handle)), isUnavailable: !isConnected
                )
            }
            try collectPipelineResults(count: slice.count, operation: operation)
        }
    }

    /// Appends `rows` to `table` with one `COPY table (columns) FROM STDIN` in text format: the rows
    /// go to the server with `PQputCopyData` about `copyPiece` bytes at a time (so a large batch
    /// never sits in memory twice), then `PQputCopyEnd`. One statement and one round trip for the
    /// whole batch; inside a transaction it is part of it. A text value ends at a NUL byte, which
    /// PostgreSQL text cannot hold, as a bound parameter does, so no request's bytes can make a batch
    /// fail.
    func append(into table: String, columns: [String], rows: [[SQLValue]]) throws(StoreError) {
        guard !rows.isEmpty else { return }
        try reconnectIfNeeded()
        roundTrips += 1
        let operation = "COPY(\(table))"
        let started = PQexec(handle, "COPY \(table) (\(columns.joined(separator: ", "))) FROM STDIN")
        guard let started, PQresultStatus(started) == PGRES_COPY_IN else {
            defer { PQclear(started) }
            _ = try check(started, operation: operation)
            throw StoreError(operation: operation, message: "the server did not start the copy")
        }
        PQclear(started)
        var failure: StoreError?
        var piece: [UInt8] = []
        piece.reserveCapacity(Self.copyPiece + 4096)
        for (index, values) in rows.enumerated() {
            Self.appendCopyLine(values, to: &piece)
            guard piece.count >= Self.copyPiece || index == rows.count - 1 else { continue }
            let sent = piece.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
            }
            guard sent == 1 else {
                failure = StoreError(
                    operation: "PQputCopyData(\(table))", message: Self.text(PQerrorMessage(handle)),
                    isUnavailable: !isConnected)
                break
            }
            piece.removeAll(keepingCapacity: true)
        }
        // With an error message the server aborts the copy, so a half-sent batch adds no rows.
        if PQputCopyEnd(handle, failure == nil ? nil : "the client could not send every row") != 1, failure == nil {
            failure = StoreError(
                operation: "PQputCopyEnd(\(table))", message: Self.text(PQerrorMessage(handle)),
                isUnavailable: !isConnected)
        }
        while let result = PQgetResult(handle) {
            defer { PQclear(result) }
            // Still copying means the end was never sent (the connection is gone): nothing more comes.
            if PQresultStatus(result) == PGRES_COPY_IN {
                failure = failure ?? StoreError(operation: operation, message: "connection lost", isUnavailable: true)
                break
            }
            guard failure == nil else { continue }
            do { _ = try check(result, operation: operation) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// About how many bytes of rows `append` hands libpq at a time.
    static let copyPiece = 1 << 20

    /// One row as a line of COPY's text format: values separated by tabs, `\N` for NULL, backslash,
    /// tab, newline and carriage return escaped, `bytea` as `\\x` and hex digits.
    static func appendCopyLine(_ values: [SQLValue], to line: inout [UInt8]) {
        for (index, value) in values.enumerated() {
            if index > 0 { line.append(0x09) }
            switch value {
            case .null: line += [0x5C, 0x4E]
            case .integer(let number): line += Array(String(number).utf8)
            case .real(let number): line += Array("\(number)".utf8)
            case .text(let text):
                scan: for byte in text.utf8 {
                    switch byte {
                    case 0x00: break scan
                    case 0x5C: line += [0x5C, 0x5C]
                    case 0x09: line += [0x5C, 0x74]
                    case 0x0A: line += [0x5C, 0x6E]
                    case 0x0D: line += [0x5C, 0x72]
                    default: line.append(byte)
                    }
                }
            case .blob(let bytes): line += Array("\\\\x\(bytes.hexString)".utf8)
            }
        }
        line.append(0x0A)
    }

    /// Statements sent before each sync point: their results (a few bytes each) stay well inside the
    /// socket buffers, so neither side blocks on the other while the pipeline is written.
    static let pipelineDepth = 256

    /// Reads the results of `count` pipelined statements and the sync point after them (each
    /// statement's result is followed by a null from `PQgetResult`); throws the first error.
    private func collectPipelineResults(count: Int, operation: String) throws(StoreError) {
        var failure: StoreError?
        var total = 0
        for _ in 0..<count {
            guard let result = PQgetResult(handle) else {
                throw StoreError(
                    operation: operation, message: Self.text(PQerrorMessage(handle)), isUnavailable: !isConnected)
            }
            if PQresultStatus(result) != PGRES_PIPELINE_ABORTED, failure == nil {
                do {
                    if try check(result, operation: operation) == nil { total += changes }
                } catch { failure = error }
            }
            PQclear(result)
            // The null that ends this statement's results.
            while let extra = PQgetResult(handle) { PQclear(extra) }
        }
        // The sync point.
        if let sync = PQgetResult(handle) { PQclear(sync) }
        if let failure { throw failure }
        changes = total
    }

    /// Calls `body` with `values` as libpq parameters: each copied into memory of its own, freed
    /// after the call; text and numbers in text format, blobs in binary format with their length.
    private static func withParameters<T>(
        _ values: [SQLValue],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, [Int32], [Int32]) -> T
    ) -> T {
        var pointers: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for pointer in pointers { free(pointer) } }
        for value in values {
            switch value {
            case .null:
                pointers.append(nil)
                lengths.append(0)
                formats.append(0)
            case .integer(let number): appendText(String(number), to: &pointers, &lengths, &formats)
            case .real(let number): appendText("\(number)", to: &pointers, &lengths, &formats)
            case .text(let text): appendText(text, to: &pointers, &lengths, &formats)
            case .blob(let bytes):
                let pointer = malloc(max(bytes.count, 1))!.assumingMemoryBound(to: CChar.self)
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { memcpy(pointer, base, raw.count) }
                }
                pointers.append(pointer)
                lengths.append(Int32(bytes.count))
                formats.append(1)
            }
        }
        return pointers.withUnsafeBufferPointer { pointerBuffer in
            pointerBuffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { constPointers in
                body(constPointers.baseAddress, lengths, formats)
            }
        }
    }

    /// Runs `body` inside `BEGIN … COMMIT`, rolling back when it throws.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if isConnected { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// The server's answer to a command, or the error it carried; nil for a command without rows.
    private func check(_ result: OpaquePointer?, operation: String) throws(StoreError) -> OpaquePointer? {
        guard let result else {
            throw StoreError(operation: operation, message: Self.text(PQerrorMessage(handle)), isUnavailable: true)
        }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK: return result
        case PGRES_COMMAND_OK:
            changes = Int(String(cString: PQcmdTuples(result))) ?? 0
            return nil
        default:
            let state = PQresultErrorField(result, clibpq_diag_sqlstate()).map { String(cString: $0) } ?? ""
            let message = Self.text(PQresultErrorMessage(result))
            // Class 08 is a connection failure; 57P0x the server shutting down or starting up.
            let unavailable = state.hasPrefix("08") || state.hasPrefix("57P") || !isConnected
            throw StoreError(
                operation: operation, message: state.isEmpty ? message : "\(message) (SQLSTATE \(state))",
                isUnavailable: unavailable)
        }
    }

    /// `sql` with each `?` outside a quoted string or identifier replaced by `$1`, `$2`, ….
    static func numbered(_ sql: String) -> String {
        var output = ""
        var count = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                output.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                output.append(character)
            } else if character == "?" {
                count += 1
                output += "$\(count)"
            } else {
                output.append(character)
            }
        }
        return output
    }

    private static func appendText(
        _ text: String, to pointers: inout [UnsafeMutablePointer<CChar>?], _ lengths: inout [Int32],
        _ formats: inout [Int32]
    ) {
        pointers.append(strdup(text))
        lengths.append(0)
        formats.append(0)
    }

    /// One column of one row, by the column's type: integers, floats, booleans (as 1 or 0) and
    /// `bytea` (hex text) are decoded; everything else is text.
    private static func value(_ result: OpaquePointer, row: Int32, column: Int32) -> SQLValue {
        guard PQgetisnull(result, row, column) == 0, let raw = PQgetvalue(result, row, column) else { return .null }
        let text = String(cString: raw)
        switch PQftype(result, column) {
        case 20, 21, 23: return Int64(text).map { .integer($0) } ?? .null
        case 700, 701, 1700: return Double(text).map { .real($0) } ?? .null
        case 16: return .integer(text == "t" ? 1 : 0)
        case 17: return [UInt8](hex: String(text.dropFirst(2))).map { .blob($0) } ?? .blob([])
        default: return .text(text)
        }
    }

    private static func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        return String(cString: pointer).trimmingSpacesAndLineBreaks()
            .split(separator: "\n").joined(separator: "; ")
    }

    /// `url` with any password replaced by `***`.
    static func redacted(_ url: String) -> String {
        if let scheme = url.firstRange(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@") {
            let credentials = url[scheme.upperBound..<at]
            if let colon = credentials.firstIndex(of: ":") {
                return String(url[..<colon]) + ":***" + String(url[at...])
            }
        }
        return url.replacing(try! Regex(#"password=\S+"#), with: "password=***")
    }
}

extension PostgresConnection: SQLConnection {}

@available(*, unavailable, message: "a PostgreSQL connection has one owner at a time")
extension PostgresConnection: Sendable {}
