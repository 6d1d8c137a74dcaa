public import FoundationEssentials
import Synchronization

/// The repositories both databases share: every statement is written once, in the SQL both SQLite
/// and PostgreSQL accept (`?` placeholders, which `PostgresConnection` numbers), with `dialect`
/// choosing where they differ. `SQLiteStore` and `PostgresStore` add how each opens.
///
/// Every method runs on the caller's thread, one at a time, behind a mutex. Callers are the gateway's
/// own threads (server pool, job workers, audit writer), never Swift's cooperative pool.
///
/// `@unchecked Sendable`: the connection, which is not thread-safe, is only touched inside
/// `lock.withLock` (through `with`); everything else is immutable.
public class SQLStore: Store, @unchecked Sendable {
    private let lock = Mutex(())
    private let connection: any SQLConnection
    private let reachable = Mutex(true)
    let kek: KeyEncryptionKey
    let dialect: SQLDialect

    init(connection: any SQLConnection, kek: KeyEncryptionKey, dialect: SQLDialect) {
        self.connection = connection
        self.kek = kek
        self.dialect = dialect
    }

    /// Runs `body` with the connection, one caller at a time.
    @discardableResult
    func with<T: Sendable>(_ body: (any SQLConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        do {
            let result = try lock.withLock { _ throws(StoreError) in try body(connection) }
            setReachable(true)
            return result
        } catch {
            if error.isUnavailable { setReachable(false) }
            throw error
        }
    }

    /// False while the database cannot be reached.
    public var isReachable: Bool { reachable.withLock { $0 } }

    func setReachable(_ value: Bool) { reachable.withLock { $0 = value } }

    /// Runs one UPDATE or DELETE; true when it changed a row.
    func changed(_ sql: String, _ values: [SQLValue]) throws(StoreError) -> Bool {
        try with { database throws(StoreError) in
            try database.query(sql, values)
            return database.changes > 0
        }
    }

    /// The schema version the database is at.
    public func schemaVersion() throws(StoreError) -> Int {
        try with { database throws(StoreError) in try dialect.schemaVersion(database) }
    }

    /// Bytes the database takes on disk (for SQLite its file and write-ahead log).
    public var sizeInBytes: Int { 0 }

    /// Where the store is, for messages: a file path or a redacted URL.
    public var location: String { "" }

    /// True for PostgreSQL, which several nodes share.
    public var isShared: Bool { dialect == .postgres }

    /// Nothing to hear of on SQLite; `PostgresStore` listens.
    public func listen(_ onNotify: @escaping @Sendable () -> Void) -> StoreListener? { nil }
}

// MARK: - Assets and keys

extension SQLStore {
    /// Stores `asset` (replacing one with the same ID) and `keys`, wrapped, in one transaction.
    public func saveAsset(_ asset: AssetRecord, keys: [ContentKeyRecord] = []) throws(StoreError) {
        let wrapped = try keys.map { key throws(StoreError) in (key, try kek.wrap(key.key, kid: key.kid)) }
        try with { database throws(StoreError) in
            try database.transaction { () throws(StoreError) in
                try database.query(
                    """
                    INSERT INTO assets (id, directory, deny_keys_while_capturing, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET directory = excluded.directory,
                        deny_keys_while_capturing = excluded.deny_keys_while_capturing, updated_at = excluded.updated_at
                    """,
                    [
                        .text(asset.id), .text(asset.directory), .integer(asset.denyKeysWhileCapturing ? 1 : 0),
                        .real(asset.createdAt.timeIntervalSince1970), .real(asset.updatedAt.timeIntervalSince1970),
                    ])
                for (key, box) in wrapped { try insertKey(key, box: box, in: database) }
            }
        }
    }

    /// Stores one content key, wrapped under the KEK.
    public func saveKey(_ key: ContentKeyRecord) throws(StoreError) {
        let box = try kek.wrap(key.key, kid: key.kid)
        try with { database throws(StoreError) in try insertKey(key, box: box, in: database) }
    }

    private func insertKey(_ key: ContentKeyRecord, box: [UInt8], in database: any SQLConnection) throws(StoreError) {
        try database.query(
            """
            INSERT INTO content_keys (kid, asset_id, wrapped, uri, created_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(kid) DO UPDATE SET asset_id = excluded.asset_id, wrapped = excluded.wrapped,
                uri = excluded.uri, created_at = excluded.created_at
            """,
            [
                .text(key.kid), .text(key.assetID), .blob(box), key.uri.map { .text($0) } ?? .null,
                .real(Date().timeIntervalSince1970),
            ])
    }

    /// Changes an asset's key policy; false when there is no such asset. On PostgreSQL, in the same
    /// transaction, an asset event and a NOTIFY tell the other nodes.
    public func setPolicy(asset id: String, denyKeysWhileCapturing: Bool, at date: Date) throws(StoreError) -> Bool {
        try with { database throws(StoreError) in
            try database.transaction { () throws(StoreError) -> Bool in
                try database.query(
                    "UPDATE assets SET deny_keys_while_capturing = ?, updated_at = ? WHERE id = ?",
                    [.integer(denyKeysWhileCapturing ? 1 : 0), .real(date.timeIntervalSince1970), .text(id)])
                guard database.changes > 0 else { return false }
                if dialect == .postgres {
                    try database.query(
                        "INSERT INTO asset_events (asset_id, at) VALUES (?, ?)",
                        [.text(id), .real(date.timeIntervalSince1970)])
                    try database.query("SELECT pg_notify('\(Self.eventChannel)', '')")
                }
                return true
            }
        }
    }

    /// Up to `limit` asset events numbered after `seq` or among `missing`, oldest first; none on
    /// SQLite.
    public func assetEvents(
        after seq: Int64, orAmong missing: [Int64], limit: Int
    ) throws(StoreError) -> [(seq: Int64, assetID: String)] {
        guard dialect == .postgres else { return [] }
        return try with { database throws(StoreError) in
            try database.query(
                "SELECT seq, asset_id FROM asset_events WHERE \(Self.afterOrAmong) ORDER BY seq LIMIT ?",
                [.integer(seq), Self.bigintArray(missing), .integer(Int64(limit))]
            ).map { (seq: $0[0].integer ?? 0, assetID: $0[1].text ?? "") }
        }
    }

    /// Selects the event rows numbered after the first parameter or among the second, a PostgreSQL
    /// array (`bigintArray`).
    static let afterOrAmong = "(seq > ? OR seq = ANY(CAST(? AS bigint[])))"

    /// `numbers` as a PostgreSQL array literal, for `afterOrAmong`.
    static func bigintArray(_ numbers: [Int64]) -> SQLValue {
        .text("{" + numbers.map(String.init).joined(separator: ",") + "}")
    }

    /// The newest asset event's `seq`, or 0.
    public func latestAssetEventSeq() throws(StoreError) -> Int64 {
        guard dialect == .postgres else { return 0 }
        return try with { database throws(StoreError) in
            try database.query("SELECT coalesce(max(seq), 0) FROM asset_events").first?.first?.integer ?? 0
        }
    }

    /// The asset with `id`, or nil.
    public func asset(_ id: String) throws(StoreError) -> AssetRecord? {
        try with { database throws(StoreError) in
            try database.query("\(Self.assetColumns) WHERE id = ?", [.text(id)]).first.map(Self.asset(from:))
        }
    }

    /// Every asset, ordered by ID.
    public func assets() throws(StoreError) -> [AssetRecord] {
        try with { database throws(StoreError) in
            try database.query("\(Self.assetColumns) ORDER BY id").map(Self.asset(from:))
        }
    }

    /// Every content key, unwrapped; a key that does not open under this KEK is an error.
    public func keys() throws(StoreError) -> [ContentKeyRecord] {
        let rows = try with { database throws(StoreError) in
            try database.query("SELECT kid, asset_id, wrapped, uri FROM content_keys ORDER BY kid").map {
                KeyRow(kid: $0[0].text ?? "", assetID: $0[1].text ?? "", wrapped: $0[2].blob ?? [], uri: $0[3].text)
            }
        }
        return try rows.map { row throws(StoreError) in
            ContentKeyRecord(
                kid: row.kid, assetID: row.assetID, key: try kek.unwrap(row.wrapped, kid: row.kid), uri: row.uri)
        }
    }

    /// The content key `kid`, unwrapped, or nil.
    public func key(_ kid: String) throws(StoreError) -> ContentKeyRecord? {
        let row = try with { database throws(StoreError) in
            try database.query("SELECT kid, asset_id, wrapped, uri FROM content_keys WHERE kid = ?", [.text(kid)])
                .first.map {
                    KeyRow(kid: $0[0].text ?? "", assetID: $0[1].text ?? "", wrapped: $0[2].blob ?? [], uri: $0[3].text)
                }
        }
        guard let row else { return nil }
        return ContentKeyRecord(
            kid: row.kid, assetID: row.assetID, key: try kek.unwrap(row.wrapped, kid: row.kid), uri: row.uri)
    }

    private struct KeyRow: Sendable {
        let kid: String
        let assetID: String
        let wrapped: [UInt8]
        let uri: String?
    }

    static let assetColumns = "SELECT id, directory, deny_keys_while_capturing, created_at, updated_at FROM assets"

    static func asset(from row: [SQLValue]) -> AssetRecord {
        AssetRecord(
            id: row[0].text ?? "", directory: row[1].text ?? "", denyKeysWhileCapturing: row[2].integer == 1,
            createdAt: date(row[3]), updatedAt: date(row[4]))
    }
}

// MARK: - Sessions

extension SQLStore {
    /// Stores a new session.
    public func insertSession(_ session: SessionRecord) throws(StoreError) {
        try with { database throws(StoreError) in
            try database.query(
                "INSERT INTO sessions (id, asset_id, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?)",
                [
                    .text(session.id), .text(session.assetID), .real(session.createdAt.timeIntervalSince1970),
                    .real(session.expiresAt.timeIntervalSince1970), optionalDate(session.revokedAt),
                ])
        }
    }

    /// Marks a session revoked; false when there is no such session or it was already revoked.
    public func revokeSession(_ id: String, at date: Date) throws(StoreError) -> Bool {
        try changed(
            "UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            [.real(date.timeIntervalSince1970), .text(id)])
    }

    /// The session with `id`, or nil.
    public func session(_ id: String) throws(StoreError) -> SessionRecord? {
        try with { database throws(StoreError) in
            try database.query("\(Self.sessionColumns) WHERE id = ?", [.text(id)]).first.map(Self.session(from:))
        }
    }

    /// Sessions that have not expired by `date`, revoked ones included.
    public func sessions(unexpiredAt date: Date) throws(StoreError) -> [SessionRecord] {
        try with { database throws(StoreError) in
            try database.query("\(Self.sessionColumns) WHERE expires_at > ?", [.real(date.timeIntervalSince1970)])
                .map(Self.session(from:))
        }
    }

    /// The IDs of every stored session of `asset`, ordered by ID.
    public func sessionIDs(asset: String) throws(StoreError) -> [String] {
        try with { database throws(StoreError) in
            try database.query("SELECT id FROM sessions WHERE asset_id = ? ORDER BY id", [.text(asset)])
                .compactMap { $0.first?.text }
        }
    }

    static let sessionColumns = "SELECT id, asset_id, created_at, expires_at, revoked_at FROM sessions"

    static func session(from row: [SQLValue]) -> SessionRecord {
        SessionRecord(
            id: row[0].text ?? "", assetID: row[1].text ?? "", createdAt: date(row[2]), expiresAt: date(row[3]),
            revokedAt: row[4] == .null ? nil : date(row[4]))
    }

    /// Deletes sessions that expired before `date`, session events from before it, and on PostgreSQL
    /// asset events from before it; returns how many sessions went.
    public func deleteSessions(expiredBefore date: Date) throws(StoreError) -> Int {
        try with { database throws(StoreError) in
            try database.query("DELETE FROM session_events WHERE at < ?", [.real(date.timeIntervalSince1970)])
            if dialect == .postgres {
                try database.query("DELETE FROM asset_events WHERE at < ?", [.real(date.timeIntervalSince1970)])
            }
            try database.query("DELETE FROM sessions WHERE expires_at <= ?", [.real(date.timeIntervalSince1970)])
            return database.changes
        }
    }

    /// Appends `event` numbered after the session's last one and returns its number in the session
    /// (nil for an unknown session); on PostgreSQL a NOTIFY follows.
    @discardableResult
    public func appendSessionEvent(_ event: SessionEventRecord) throws(StoreError) -> Int64? {
        let values: [SQLValue] = [
            .text(event.kind.rawValue), optionalText(event.state), optionalText(event.reason),
            optionalDate(event.since),
            event.reportSeq.map { .integer($0) } ?? .null, optionalDate(event.observedAt),
            optionalDate(event.leaseExpiresAt), .real(event.at.timeIntervalSince1970), .text(event.origin),
            .integer(event.announced ? 1 : 0),
        ]
        let columns = """
            INSERT INTO session_events (session_id, session_seq, kind, state, reason, since, report_seq,
                observed_at, lease_expires_at, at, origin, announced)
            """
        return try with { database throws(StoreError) in
            try database.transaction { () throws(StoreError) -> Int64? in
                guard dialect == .postgres else {
                    // SQLite allows no UPDATE inside a WITH: the number is taken, then read back.
                    try database.query(
                        "UPDATE sessions SET event_seq = event_seq + 1 WHERE id = ?", [.text(event.sessionID)])
                    guard database.changes > 0 else { return nil }
                    let rows = try database.query(
                        """
                        \(columns)
                        SELECT id, event_seq, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM sessions WHERE id = ? RETURNING session_seq
                        """,
                        values + [.text(event.sessionID)])
                    return rows.first?.first?.integer
                }
                let rows = try database.query(
                    """
                    WITH next AS (UPDATE sessions SET event_seq = event_seq + 1 WHERE id = ? RETURNING id, event_seq)
                    \(columns)
                    SELECT id, event_seq, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM next RETURNING session_seq
                    """,
                    [.text(event.sessionID)] + values)
                // Delivered at commit, never before the row is visible.
                try database.query("SELECT pg_notify('\(Self.eventChannel)', '')")
                return rows.first?.first?.integer
            }
        }
    }

    /// Up to `limit` events numbered after `seq` or among `missing`, oldest first; none on SQLite,
    /// which no other node reads.
    public func sessionEvents(
        after seq: Int64, orAmong missing: [Int64], limit: Int
    ) throws(StoreError) -> [SessionEventRecord] {
        guard dialect == .postgres else { return [] }
        return try with { database throws(StoreError) in
            try database.query(
                "\(Self.eventColumns) WHERE \(Self.afterOrAmong) ORDER BY seq LIMIT ?",
                [.integer(seq), Self.bigintArray(missing), .integer(Int64(limit))]
            ).map(Self.sessionEvent(from:))
        }
    }

    /// Up to `limit` announced events of `session` after its event `sessionSeq`, oldest first.
    public func sessionEvents(
        session: String, after sessionSeq: Int64, limit: Int
    ) throws(StoreError) -> [SessionEventRecord] {
        try with { database throws(StoreError) in
            try database.query(
                "\(Self.eventColumns) WHERE session_id = ? AND session_seq > ? AND announced ORDER BY session_seq LIMIT ?",
                [.text(session), .integer(sessionSeq), .integer(Int64(limit))]
            ).map(Self.sessionEvent(from:))
        }
    }

    /// The newest capture event of each session (or of `session`) whose lease runs past the
    /// database's `now()`; none on SQLite.
    public func liveCaptureEvents(session: String?) throws(StoreError) -> [SessionEventRecord] {
        guard dialect == .postgres else { return [] }
        let one = session == nil ? "" : " AND session_id = ?"
        return try with { database throws(StoreError) in
            try database.query(
                """
                SELECT \(Self.eventColumnList) FROM (
                    SELECT DISTINCT ON (session_id) \(Self.eventColumnList) FROM session_events
                    WHERE kind = 'capture'\(one) ORDER BY session_id, session_seq DESC
                ) AS latest WHERE lease_expires_at > extract(epoch FROM now())
                """,
                session.map { [.text($0)] } ?? []
            ).map(Self.sessionEvent(from:))
        }
    }

    static let eventColumnList = """
        seq, session_id, session_seq, kind, state, reason, since, report_seq, observed_at,
            lease_expires_at, at, origin, announced
        """
    static let eventColumns = "SELECT \(eventColumnList) FROM session_events"

    static func sessionEvent(from row: [SQLValue]) -> SessionEventRecord {
        SessionEventRecord(
            seq: row[0].integer ?? 0, sessionID: row[1].text ?? "", sessionSeq: row[2].integer ?? 0,
            kind: SessionEventRecord.Kind(rawValue: row[3].text ?? "") ?? .capture, state: row[4].text,
            reason: row[5].text, since: nullableDate(row[6]), reportSeq: row[7].integer,
            observedAt: nullableDate(row[8]), leaseExpiresAt: nullableDate(row[9]), at: Self.date(row[10]),
            origin: row[11].text ?? "", announced: row[12].integer != 0)
    }

    /// The newest event's `seq`, or 0.
    public func latestSessionEventSeq() throws(StoreError) -> Int64 {
        guard dialect == .postgres else { return 0 }
        return try with { database throws(StoreError) in
            try database.query("SELECT coalesce(max(seq), 0) FROM session_events").first?.first?.integer ?? 0
        }
    }

    /// The channel NOTIFY uses for session events.
    static let eventChannel = "guardplay_events"
}

// MARK: - API tokens

extension SQLStore {
    /// Stores a new API token.
    public func insertToken(_ token: APITokenRecord) throws(StoreError) {
        try with { database throws(StoreError) in
            try database.query(
                "INSERT INTO api_tokens (id, secret_hash, scopes, name, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    .text(token.id), .blob(token.secretHash), .text(token.scopes.joined(separator: ",")),
                    .text(token.name), .real(token.createdAt.timeIntervalSince1970), optionalDate(token.revokedAt),
                ])
        }
    }

    /// The token with `id`, or nil.
    public func token(_ id: String) throws(StoreError) -> APITokenRecord? {
        try with { database throws(StoreError) in
            try database.query("\(Self.tokenColumns) WHERE id = ?", [.text(id)]).first.map(Self.token(from:))
        }
    }

    /// Every token, oldest first.
    public func tokens() throws(StoreError) -> [APITokenRecord] {
        try with { database throws(StoreError) in
            try database.query("\(Self.tokenColumns) ORDER BY created_at, id").map(Self.token(from:))
        }
    }

    /// Marks a token revoked; false when there is no such live token.
    public func revokeToken(_ id: String, at date: Date) throws(StoreError) -> Bool {
        try changed(
            "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            [.real(date.timeIntervalSince1970), .text(id)])
    }

    static let tokenColumns = "SELECT id, secret_hash, scopes, name, created_at, revoked_at FROM api_tokens"

    static func token(from row: [SQLValue]) -> APITokenRecord {
        APITokenRecord(
            id: row[0].text ?? "", secretHash: row[1].blob ?? [],
            scopes: (row[2].text ?? "").split(separator: ",").map(String.init), name: row[3].text ?? "",
            createdAt: date(row[4]), revokedAt: row[5] == .null ? nil : date(row[5]))
    }
}

// MARK: - Audit

extension SQLStore {
    /// Appends audit records in one transaction.
    public func appendAudit(_ records: [AuditRecord]) throws(StoreError) {
        try appendAudit(records, refusals: [])
    }

    /// Appends `records` and adds `refusals` to the counts of their minute, reason and address, in
    /// one transaction: on PostgreSQL the records go in one `COPY`, so a batch costs the database one
    /// statement however many grants it holds.
    public func appendAudit(_ records: [AuditRecord], refusals: [AuditRefusalCount]) throws(StoreError) {
        guard !records.isEmpty || !refusals.isEmpty else { return }
        try with { database throws(StoreError) in
            try database.transaction { () throws(StoreError) in
                try database.append(
                    into: "audit",
                    columns: ["at", "action", "outcome", "reason", "asset_id", "kid", "session_id", "remote"],
                    rows: records.map { record in
                        [
                            .real(record.at.timeIntervalSince1970), .text(record.action), .text(record.outcome),
                            optionalText(record.reason), optionalText(record.assetID), optionalText(record.kid),
                            optionalText(record.sessionID), optionalText(record.remote),
                        ]
                    })
                try database.execute(
                    """
                    INSERT INTO audit_refusals (minute, reason, remote, count) VALUES (?, ?, ?, ?)
                    ON CONFLICT(minute, reason, remote) DO UPDATE SET count = audit_refusals.count + excluded.count
                    """,
                    rows: refusals.map { refusal in
                        [
                            .real(refusal.minute.timeIntervalSince1970), .text(refusal.reason), .text(refusal.remote),
                            .integer(Int64(refusal.count)),
                        ]
                    })
            }
        }
    }

    /// Deletes audit records and refusal counts from before `date`; returns how many rows went.
    public func pruneAudit(before date: Date) throws(StoreError) -> Int {
        try with { database throws(StoreError) in
            try database.transaction { () throws(StoreError) in
                try database.query("DELETE FROM audit WHERE at < ?", [.real(date.timeIntervalSince1970)])
                let records = database.changes
                try database.query("DELETE FROM audit_refusals WHERE minute < ?", [.real(date.timeIntervalSince1970)])
                return records + database.changes
            }
        }
    }

    /// The newest `limit` audit records, newest first.
    public func recentAudit(limit: Int) throws(StoreError) -> [AuditRecord] {
        try with { database throws(StoreError) in
            try database.query(
                "SELECT at, action, outcome, reason, asset_id, kid, session_id, remote FROM audit ORDER BY seq DESC LIMIT ?",
                [.integer(Int64(limit))]
            ).map { row in
                AuditRecord(
                    at: Self.date(row[0]), action: row[1].text ?? "", outcome: row[2].text ?? "", reason: row[3].text,
                    assetID: row[4].text, kid: row[5].text, sessionID: row[6].text, remote: row[7].text)
            }
        }
    }

    /// How many audit records there are.
    public func auditCount() throws(StoreError) -> Int {
        try with { database throws(StoreError) in
            Int(try database.query("SELECT count(*) FROM audit").first?.first?.integer ?? 0)
        }
    }

    /// Every refusal count, by minute, reason and address.
    public func refusalCounts() throws(StoreError) -> [AuditRefusalCount] {
        try with { database throws(StoreError) in
            try database.query(
                "SELECT minute, reason, remote, count FROM audit_refusals ORDER BY minute, reason, remote"
            )
            .map { row in
                AuditRefusalCount(
                    minute: Self.date(row[0]), reason: row[1].text ?? "", remote: row[2].text ?? "",
                    count: Int(row[3].integer ?? 0))
            }
        }
    }
}

// MARK: - Helpers

extension SQLStore {
    static func date(_ value: SQLValue) -> Date { Date(timeIntervalSince1970: value.real ?? 0) }
}

func nullableDate(_ value: SQLValue) -> Date? { value == .null ? nil : SQLStore.date(value) }
func optionalDate(_ date: Date?) -> SQLValue { date.map { .real($0.timeIntervalSince1970) } ?? .null }
func optionalText(_ text: String?) -> SQLValue { text.map { .text($0) } ?? .null }
