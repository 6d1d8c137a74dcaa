public import FoundationEssentials
import Store

/// How the gateway behaves: where it keeps its data and how long things last.
public struct GatewayConfiguration: Sendable {
    /// The directory holding the database, the KEK file (by default) and packaged assets.
    public var dataDirectory: String
    /// Packaging inputs must lie inside this directory.
    public var inputRoot: String
    /// Directories assets may be imported from (`PUT /v1/assets/{id}`).
    public var importRoots: [String]
    /// How long a new session lasts unless the request asks for less.
    public var sessionTTL: TimeInterval
    /// The longest session a request may ask for.
    public var maxSessionTTL: TimeInterval
    /// How long one capture report holds before the session turns `unknown`.
    public var captureLease: TimeInterval
    /// Packaging worker threads.
    public var jobWorkers: Int
    /// How many times a job is started before a restart marks it failed.
    public var maxJobAttempts: Int
    /// The path key URIs are rewritten to.
    public var keyPathPrefix: String
    /// How often queued audit records are written.
    public var auditInterval: TimeInterval
    /// Audit records that may wait in memory; past it the oldest are dropped (and counted).
    public var auditCapacity: Int
    /// Queued audit records that start a write at once rather than at the next `auditInterval`.
    public var auditBatch = 1000
    /// How long audit records and refusal counts are kept before the writer prunes them.
    public var auditRetention: TimeInterval = 30 * 86400
    /// Client addresses whose refusals are counted each minute; further addresses share one count.
    public var auditCountCapacity = 10_000
    /// Refused key requests one client address may make at once before it gets 429.
    public var refusalBurst: Double = 30
    /// Refused key requests a second one client address regains.
    public var refusalRate: Double = 5
    /// Client addresses the refusal limiter tracks at most.
    public var refusalClients = 10_000
    /// Event streams one session may have open.
    public var maxStreamsPerSession = 4
    /// Event streams one token (session or API token) may hold open.
    public var maxStreamsPerToken = 16
    /// Event streams open in all; keep it below the server's connection limit.
    public var maxStreams = 768
    /// How long a packaging job's claim on a shared store lasts by the database's clock; the worker
    /// renews it every third of that, and once it lapses (the node died) another node takes the job.
    public var jobLease: TimeInterval = defaultJobLease

    /// A configuration with the defaults for everything but the data directory.
    public init(
        dataDirectory: String, inputRoot: String = ".", importRoots: [String] = [], sessionTTL: TimeInterval = 4 * 3600,
        maxSessionTTL: TimeInterval = 24 * 3600, captureLease: TimeInterval = 10, jobWorkers: Int = 1,
        maxJobAttempts: Int = 3, keyPathPrefix: String = "/v1/keys/", auditInterval: TimeInterval = 0.2,
        auditCapacity: Int = 1_000_000
    ) {
        self.dataDirectory = dataDirectory
        self.inputRoot = inputRoot
        self.importRoots = importRoots
        self.sessionTTL = sessionTTL
        self.maxSessionTTL = maxSessionTTL
        self.captureLease = captureLease
        self.jobWorkers = jobWorkers
        self.maxJobAttempts = maxJobAttempts
        self.keyPathPrefix = keyPathPrefix
        self.auditInterval = auditInterval
        self.auditCapacity = auditCapacity
    }
}

extension GatewayConfiguration {
    /// The capture lease when none is configured (`--lease`): how long a session's report holds.
    public static let defaultCaptureLease: TimeInterval = 10
}
