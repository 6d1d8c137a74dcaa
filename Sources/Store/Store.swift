public import FoundationEssentials

/// The gateway's durable state: assets, wrapped content keys, sessions, API tokens, packaging jobs
/// and the audit log. Two implementations: `SQLiteStore`, one embedded database under the data
/// directory (the default), and `PostgresStore`, one PostgreSQL database that several gateway nodes
/// share. `Store.open` picks one from a `StoreLocation`.
///
/// Content keys are wrapped under the key-encryption key before they are written and unwrapped
/// after they are read; the KEK itself never enters the database.
public protocol Store: AuditWriting {
    /// Where the store is, for messages: a file path or a URL without its password.
    var location: String { get }
    /// The schema version the database is at.
    func schemaVersion() throws(StoreError) -> Int
    /// Bytes the database takes on disk.
    var sizeInBytes: Int { get }
    /// False while the database cannot be reached (PostgreSQL, since its last call or the listener's
    /// last attempt); always true for SQLite.
    var isReachable: Bool { get }
    /// True when other gateway nodes may share this store (PostgreSQL): what a node does not hold in
    /// memory it looks up here, and it hears of other nodes' changes through `listen`.
    var isShared: Bool { get }

    // Assets and keys.
    /// Stores `asset` (replacing one with the same ID) and `keys`, wrapped, in one transaction.
    func saveAsset(_ asset: AssetRecord, keys: [ContentKeyRecord]) throws(StoreError)
    /// Stores one content key, wrapped under the KEK.
    func saveKey(_ key: ContentKeyRecord) throws(StoreError)
    /// Changes an asset's key policy; false when there is no such asset. On PostgreSQL the change is
    /// also an asset event, and listening nodes are told to look.
    func setPolicy(asset id: String, denyKeysWhileCapturing: Bool, at date: Date) throws(StoreError) -> Bool
    /// Up to `limit` asset events numbered after `seq` or among `missing`, oldest first, as each
    /// event's number and the asset it changed; on SQLite none.
    func assetEvents(
        after seq: Int64, orAmong missing: [Int64], limit: Int
    ) throws(StoreError) -> [(seq: Int64, assetID: String)]
    /// The newest asset event's `seq`, or 0.
    func latestAssetEventSeq() throws(StoreError) -> Int64
    /// The asset with `id`, or nil.
    func asset(_ id: String) throws(StoreError) -> AssetRecord?
    /// Every asset, ordered by ID.
    func assets() throws(StoreError) -> [AssetRecord]
    /// Every content key, unwrapped; a key that does not open under this KEK is an error.
    func keys() throws(StoreError) -> [ContentKeyRecord]
    /// The content key `kid`, unwrapped, or nil.
    func key(_ kid: String) throws(StoreError) -> ContentKeyRecord?

    // Sessions.
    /// Stores a new session.
    func insertSession(_ session: SessionRecord) throws(StoreError)
    /// Marks a session revoked; false when there is no such session or it was already revoked.
    func revokeSession(_ id: String, at date: Date) throws(StoreError) -> Bool
    /// The session with `id`, or nil.
    func session(_ id: String) throws(StoreError) -> SessionRecord?
    /// Sessions that have not expired by `date`, revoked ones included.
    func sessions(unexpiredAt date: Date) throws(StoreError) -> [SessionRecord]
    /// Deletes sessions that expired before `date`; returns how many.
    func deleteSessions(expiredBefore date: Date) throws(StoreError) -> Int
    /// The IDs of every session of asset `asset` still stored (revoked and expired ones included until
    /// they are deleted), ordered by ID: the candidates a watermark detector looks a copy up among.
    func sessionIDs(asset: String) throws(StoreError) -> [String]

    // Session events: what a resumed event stream missed, and for the nodes sharing a store what
    // the others did.
    /// Appends `event` with the session's next sequence number and tells listening nodes to look;
    /// returns that number (nil when there is no such session).
    @discardableResult
    func appendSessionEvent(_ event: SessionEventRecord) throws(StoreError) -> Int64?
    /// Up to `limit` events numbered after `seq` or among `missing` (numbers a reader passed before
    /// their transactions committed), oldest first, for the other nodes (none on SQLite, which no
    /// other node shares).
    func sessionEvents(after seq: Int64, orAmong missing: [Int64], limit: Int) throws(StoreError)
        -> [SessionEventRecord]
    /// Up to `limit` announced events of `session` numbered after `sessionSeq` in that session,
    /// oldest first: what an event stream resumed with `Last-Event-ID` missed.
    func sessionEvents(
        session: String, after sessionSeq: Int64, limit: Int
    ) throws(StoreError) -> [SessionEventRecord]
    /// The newest event's `seq`, or 0.
    func latestSessionEventSeq() throws(StoreError) -> Int64
    /// The newest capture event of each session (of `session` only, when given) whose lease has not
    /// lapsed by the database's clock: the capture state a node that first sees the session starts
    /// it in. Empty on SQLite, which keeps no events.
    func liveCaptureEvents(session: String?) throws(StoreError) -> [SessionEventRecord]
    /// Calls `onNotify` on a thread of its own whenever another node may have appended events, and
    /// once after every (re)connection so nothing missed meanwhile is lost; nil when no other node
    /// shares the store.
    func listen(_ onNotify: @escaping @Sendable () -> Void) -> StoreListener?

    // API tokens.
    /// Stores a new API token.
    func insertToken(_ token: APITokenRecord) throws(StoreError)
    /// The token with `id`, or nil.
    func token(_ id: String) throws(StoreError) -> APITokenRecord?
    /// Every token, oldest first.
    func tokens() throws(StoreError) -> [APITokenRecord]
    /// Marks a token revoked; false when there is no such live token.
    func revokeToken(_ id: String, at date: Date) throws(StoreError) -> Bool

    // Packaging jobs.
    /// Stores `job`, unless a job with its idempotency key exists: then that job is returned.
    func insertJob(_ job: JobRecord) throws(StoreError) -> JobInsertion
    /// The job with `id`, or nil.
    func job(_ id: String) throws(StoreError) -> JobRecord?
    /// Up to `limit` jobs created before the job at `seq` (all when nil), newest first.
    func jobs(before seq: Int64?, limit: Int) throws(StoreError) -> [JobRecord]
    /// How many jobs are in each state.
    func jobCounts() throws(StoreError) -> [JobState: Int]
    /// Jobs in `state`, oldest first.
    func jobs(in state: JobState) throws(StoreError) -> [JobRecord]
    /// Marks the oldest queued job running, counting the attempt, and returns it; nil when none waits.
    /// On PostgreSQL the claim holds for `lease` seconds by the database's clock unless renewed.
    func claimNextJob(at date: Date, lease: TimeInterval) throws(StoreError) -> JobRecord?
    /// Renews the lease of attempt `attempt` of a running job for `lease` seconds from the database's
    /// clock; false when that attempt no longer holds the job (it finished, was cancelled, or its lease
    /// lapsed and another node took it over).
    func renewJobLease(_ id: String, attempt: Int, lease: TimeInterval) throws(StoreError) -> Bool
    /// Records a running job's progress.
    func setJobProgress(_ id: String, progress: Double, at date: Date) throws(StoreError)
    /// Replaces a running job's stored options (`PackagingJobOptions.stored`), as when its output's
    /// container is known.
    func setJobOptions(_ id: String, options: String, at date: Date) throws(StoreError)
    /// Moves a job that is not yet final to `state`; false when it was already final.
    func finishJob(
        _ id: String, state: JobState, error: String?, output: String?, at date: Date
    ) throws(StoreError) -> Bool
    /// Puts a running job back in the queue without counting against it; false when it was not running.
    func requeueJob(_ id: String, at date: Date) throws(StoreError) -> Bool
    /// Jobs left `running` by a process that died go back to `queued`, or to `failed` once they have
    /// been started `maxAttempts` times. Returns the jobs it changed.
    func recoverInterruptedJobs(maxAttempts: Int, at date: Date) throws(StoreError) -> [JobRecord]

    // Audit.
    /// Appends audit records in one transaction.
    func appendAudit(_ records: [AuditRecord]) throws(StoreError)
    /// The newest `limit` audit records, newest first.
    func recentAudit(limit: Int) throws(StoreError) -> [AuditRecord]
    /// How many audit records there are.
    func auditCount() throws(StoreError) -> Int
    /// Every refusal count, by minute, reason and address.
    func refusalCounts() throws(StoreError) -> [AuditRefusalCount]
}

extension Store {
    /// Claims the oldest queued job with the default lease (`defaultJobLease`).
    public func claimNextJob(at date: Date) throws(StoreError) -> JobRecord? {
        try claimNextJob(at: date, lease: defaultJobLease)
    }

    /// Stores `asset` with no keys.
    public func saveAsset(_ asset: AssetRecord) throws(StoreError) { try saveAsset(asset, keys: []) }

    /// Moves a job that is not yet final to `state`, with no error or output.
    public func finishJob(_ id: String, state: JobState, at date: Date) throws(StoreError) -> Bool {
        try finishJob(id, state: state, error: nil, output: nil, at: date)
    }

    /// Moves a job that is not yet final to `state` with why it failed.
    public func finishJob(_ id: String, state: JobState, error: String, at date: Date) throws(StoreError) -> Bool {
        try finishJob(id, state: state, error: error, output: nil, at: date)
    }

    /// Moves a job that is not yet final to `state` with the directory it produced.
    public func finishJob(_ id: String, state: JobState, output: String, at date: Date) throws(StoreError) -> Bool {
        try finishJob(id, state: state, error: nil, output: output, at: date)
    }
}

/// How long a job claim on a shared store lasts without a renewal, unless configured otherwise.
public let defaultJobLease: TimeInterval = 30

/// A running `listen`; `stop` ends it.
public protocol StoreListener: Sendable {
    /// Stops listening and waits for the listening thread to end.
    func stop()
}

/// Where the audit log writes: the store, or in tests a writer that fails as a full disk would.
public protocol AuditWriting: Sendable {
    /// Appends `records` and adds `refusals` to their minute's counts, in one transaction.
    func appendAudit(_ records: [AuditRecord], refusals: [AuditRefusalCount]) throws(StoreError)
    /// Deletes audit records and refusal counts older than `date`; returns how many rows went.
    func pruneAudit(before date: Date) throws(StoreError) -> Int
}

/// Which database a store lives in: `--store`, `store =` in the configuration, or `GUARDPLAY_STORE`.
public enum StoreLocation: Sendable, Equatable, CustomStringConvertible {
    /// `guardplay.db` under the data directory.
    case sqlite(directory: String)
    /// A PostgreSQL database, by its `postgres://` or `postgresql://` URL.
    case postgres(url: String)

    /// Reads an option's value: a PostgreSQL URL, or `sqlite` for the data directory's database.
    public init(option value: String, dataDirectory: String) throws(StoreError) {
        if value == "sqlite" {
            self = .sqlite(directory: dataDirectory)
        } else if value.hasPrefix("postgres://") || value.hasPrefix("postgresql://") {
            self = .postgres(url: value)
        } else {
            throw StoreError(
                operation: "store",
                message: "'\(PostgresConnection.redacted(value))' is neither 'sqlite' nor a postgres:// or "
                    + "postgresql:// URL")
        }
    }

    public var description: String {
        switch self {
        case .sqlite(let directory): "sqlite (\(directory))"
        case .postgres(let url): PostgresConnection.redacted(url)
        }
    }
}

extension StoreLocation {
    /// Opens the store here, creating and migrating it as needed. A PostgreSQL database already used
    /// with another KEK is refused.
    public func open(kek: KeyEncryptionKey) throws(StoreError) -> any Store {
        switch self {
        case .sqlite(let directory): try SQLiteStore(directory: directory, kek: kek)
        case .postgres(let url): try PostgresStore(url: url, kek: kek)
        }
    }
}
