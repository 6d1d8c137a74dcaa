public import FoundationEssentials

/// A packaged asset the gateway serves: its directory and its key policy.
public struct AssetRecord: Sendable, Equatable {
    /// The asset ID, `[A-Za-z0-9_-]{1,64}`.
    public var id: String
    /// The absolute directory holding its playlists and segments.
    public var directory: String
    /// When true, keys are refused to sessions whose capture state is `capturing` or `unknown`.
    public var denyKeysWhileCapturing: Bool
    /// When the asset was first stored.
    public var createdAt: Date
    /// When the asset last changed.
    public var updatedAt: Date

    /// An asset record.
    public init(id: String, directory: String, denyKeysWhileCapturing: Bool, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.directory = directory
        self.denyKeysWhileCapturing = denyKeysWhileCapturing
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A content key, unwrapped: only the store ever sees its wrapped form.
public struct ContentKeyRecord: Sendable, Equatable {
    /// The key ID: 32 lower-case hex digits.
    public var kid: String
    /// The asset the key encrypts.
    public var assetID: String
    /// The 16-byte AES-128 key.
    public var key: [UInt8]
    /// The key URI the asset's playlists use for it, when it is not derived from the key ID.
    public var uri: String?

    /// A content key record.
    public init(kid: String, assetID: String, key: [UInt8], uri: String? = nil) {
        self.kid = kid
        self.assetID = assetID
        self.key = key
        self.uri = uri
    }
}

/// A playback session.
public struct SessionRecord: Sendable, Equatable {
    /// The session ID.
    public var id: String
    /// The asset it may play.
    public var assetID: String
    /// When it was created.
    public var createdAt: Date
    /// When its token stops working.
    public var expiresAt: Date
    /// When it was revoked, if it was.
    public var revokedAt: Date?

    /// A session record.
    public init(id: String, assetID: String, createdAt: Date, expiresAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.assetID = assetID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }
}

/// An API token; the store keeps only a hash of its secret.
public struct APITokenRecord: Sendable, Equatable {
    /// The public part of the token, used to find it.
    public var id: String
    /// SHA-256 of the secret part.
    public var secretHash: [UInt8]
    /// The scopes it grants.
    public var scopes: [String]
    /// A name for people.
    public var name: String
    /// When it was created.
    public var createdAt: Date
    /// When it was revoked, if it was.
    public var revokedAt: Date?

    /// An API token record.
    public init(
        id: String, secretHash: [UInt8], scopes: [String], name: String, createdAt: Date, revokedAt: Date? = nil
    ) {
        self.id = id
        self.secretHash = secretHash
        self.scopes = scopes
        self.name = name
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// Where a packaging job stands.
public enum JobState: String, Sendable, CaseIterable {
    /// Waiting for a worker.
    case queued
    /// A worker is packaging it.
    case running
    /// The asset is packaged and served.
    case succeeded
    /// It failed; `error` says why.
    case failed
    /// It was cancelled before it finished.
    case cancelled

    /// True for states a job never leaves.
    public var isFinal: Bool { self == .succeeded || self == .failed || self == .cancelled }
}

/// A packaging job.
public struct JobRecord: Sendable, Equatable {
    /// The job ID.
    public var id: String
    /// Its position in creation order, for cursors.
    public var seq: Int64
    /// The client's `Idempotency-Key`, if it sent one.
    public var idempotencyKey: String?
    /// A digest of the request, to tell a retry from a different request under the same key.
    public var fingerprint: String
    /// The input file, relative to the gateway's input root.
    public var input: String
    /// The asset it produces.
    public var assetID: String
    /// The key policy the produced asset gets.
    public var denyKeysWhileCapturing: Bool
    /// The content key made for it.
    public var kid: String?
    /// Where it stands.
    public var state: JobState
    /// From 0 to 1.
    public var progress: Double
    /// How many times a worker has started it.
    public var attempts: Int
    /// Why it failed.
    public var error: String?
    /// The directory it produced.
    public var output: String?
    /// When it was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date
    /// How it packages (container, encryption, key period), in the gateway's stored form; nil for the
    /// defaults.
    public var options: String?

    /// A job record; `seq` is assigned by the store.
    public init(
        id: String, seq: Int64 = 0, idempotencyKey: String?, fingerprint: String, input: String, assetID: String,
        denyKeysWhileCapturing: Bool, kid: String?, state: JobState = .queued, progress: Double = 0, attempts: Int = 0,
        error: String? = nil, output: String? = nil, createdAt: Date, updatedAt: Date, options: String? = nil
    ) {
        self.options = options
        self.id = id
        self.seq = seq
        self.idempotencyKey = idempotencyKey
        self.fingerprint = fingerprint
        self.input = input
        self.assetID = assetID
        self.denyKeysWhileCapturing = denyKeysWhileCapturing
        self.kid = kid
        self.state = state
        self.progress = progress
        self.attempts = attempts
        self.error = error
        self.output = output
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One audited decision: a key granted or refused, a session created or revoked.
public struct AuditRecord: Sendable, Equatable {
    /// When.
    public var at: Date
    /// What was asked, such as `key`.
    public var action: String
    /// `granted` or `refused`.
    public var outcome: String
    /// Why it was refused, such as `token-expired`.
    public var reason: String?
    /// The asset concerned.
    public var assetID: String?
    /// The key ID concerned.
    public var kid: String?
    /// The session concerned.
    public var sessionID: String?
    /// The client's address.
    public var remote: String?

    /// An audit record.
    public init(
        at: Date, action: String, outcome: String, reason: String? = nil, assetID: String? = nil, kid: String? = nil,
        sessionID: String? = nil, remote: String? = nil
    ) {
        self.at = at
        self.action = action
        self.outcome = outcome
        self.reason = reason
        self.assetID = assetID
        self.kid = kid
        self.sessionID = sessionID
        self.remote = remote
    }
}

/// How many refusals with no valid token one client address had for one reason in one minute: the
/// audit trail keeps these as counts, so a flood of them costs one row a minute, not one per request.
public struct AuditRefusalCount: Sendable, Equatable {
    /// The start of the minute.
    public var minute: Date
    /// Why they were refused, such as `token-missing`.
    public var reason: String
    /// The client's address.
    public var remote: String
    /// How many.
    public var count: Int

    /// A count of refusals.
    public init(minute: Date, reason: String, remote: String, count: Int) {
        self.minute = minute
        self.reason = reason
        self.remote = remote
        self.count = count
    }
}

/// A change to a session that every node sharing the store must hear of, as a row of the
/// PostgreSQL events table: NOTIFY only tells nodes to look, and they read these in `seq` order.
public struct SessionEventRecord: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable {
        /// The session was revoked at `at`.
        case revoked
        /// A report was applied: the capture state, its lease and the report's sequence number.
        case capture
    }

    /// Its position among all events, assigned by the store.
    public var seq: Int64
    /// The session.
    public var sessionID: String
    /// Its position among the session's own events, assigned by the store.
    public var sessionSeq: Int64
    /// What happened.
    public var kind: Kind
    /// The capture state (`clear`, `capturing` or `unknown`), for capture events.
    public var state: String?
    /// Why the session is in that state.
    public var reason: String?
    /// When it entered that state.
    public var since: Date?
    /// The applied report's sequence number.
    public var reportSeq: Int64?
    /// When the client observed the report.
    public var observedAt: Date?
    /// When the lease the report renewed runs out.
    public var leaseExpiresAt: Date?
    /// When it happened.
    public var at: Date
    /// The node that wrote it, so the node skips its own events.
    public var origin: String
    /// Whether event streams were told of it: a revocation or a change of state, not a report
    /// that only renewed the lease. Only announced events carry an event ID, and only they are
    /// replayed to a stream resumed with `Last-Event-ID`.
    public var announced: Bool

    /// An event; `seq` and `sessionSeq` are assigned by the store.
    public init(
        seq: Int64 = 0, sessionID: String, sessionSeq: Int64 = 0, kind: Kind, state: String? = nil,
        reason: String? = nil, since: Date? = nil, reportSeq: Int64? = nil, observedAt: Date? = nil,
        leaseExpiresAt: Date? = nil, at: Date, origin: String, announced: Bool = true
    ) {
        self.seq = seq
        self.sessionID = sessionID
        self.sessionSeq = sessionSeq
        self.kind = kind
        self.state = state
        self.reason = reason
        self.since = since
        self.reportSeq = reportSeq
        self.observedAt = observedAt
        self.leaseExpiresAt = leaseExpiresAt
        self.at = at
        self.origin = origin
        self.announced = announced
    }
}
