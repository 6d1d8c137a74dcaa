import CaptureMonitor
import Crypto
public import FoundationEssentials
public import Store
import Synchronization
import ThreadSupport

/// An asset as the API shows it.
public struct AssetSummary: Sendable, Equatable {
    /// The asset ID.
    public let id: String
    /// The key policy.
    public let denyKeysWhileCapturing: Bool
    /// The master playlist's path inside the asset, when it has one.
    public let master: String?
    /// How many files it serves.
    public let fileCount: Int
    /// Its key IDs.
    public let kids: [String]
    /// When it was first stored.
    public let createdAt: Date
    /// When it last changed.
    public let updatedAt: Date
    /// What its A/B watermark takes to identify a session, nil when it has none.
    public var watermark: WatermarkSummary? = nil
}

/// A key to import with an asset.
public struct ImportedKey: Sendable, Equatable {
    /// 32 hex digits.
    public let kid: String
    /// The 16-byte key.
    public let key: [UInt8]
    /// The URI the asset's playlists use for this key, when it does not name the key ID.
    public let uri: String?

    /// A key to import.
    public init(kid: String, key: [UInt8], uri: String?) {
        self.kid = kid
        self.key = key
        self.uri = uri
    }
}

/// The gateway's core: sessions and their tokens, key delivery with its audit trail, the asset
/// catalog, capture state and session events, packaging jobs and metrics. No sockets: the control
/// API drives it, and tests drive it directly.
///
/// Lifecycle: `init` loads assets, keys and sessions from the store; `start` starts its threads (the
/// audit writer, the lease sweeper, the packaging workers); `stop` stops them, requeueing any job in
/// progress and writing every queued audit record.
public final class Gateway: Sendable {
    /// How the gateway was configured.
    public let configuration: GatewayConfiguration
    /// The durable store.
    public let store: any Store
    /// Prometheus metrics.
    public let metrics = Metrics()
    /// Session events for event streams.
    public let events = SessionEventHub()
    /// Packaging jobs.
    public let jobs: PackagingJobs
    /// Playback sessions.
    public let sessions: SessionRegistry
    /// Limits on open event streams.
    public let streams: StreamQuota
    /// Which segment variants each session gets, under the watermarking key.
    public let watermark: SessionWatermark

    let catalog = AssetCatalog()
    let keyRequests: Metrics.Family
    let licenseRequests: Metrics.Family
    let watermarkRequests: Metrics.Family
    let audit: AuditLog
    let refusals: RefusalLimiter
    let signer: SessionTokenSigner
    let clock: any GatewayClock
    let log: @Sendable (String) -> Void
    private let sweeper = PeriodicThread(name: "lease-sweeper", interval: 0.1)
    private let listener = Mutex<(any StoreListener)?>(nil)
    private let lastPrune = Mutex(Date.distantPast)
    /// The asset events this node has applied (on a shared store).
    private let assetCursor = Mutex(EventCursor(after: 0))

    /// A gateway over `store`, with session tokens signed by a key derived from `kek`; `engine` is
    /// the packager (nil in builds without one). The audit trail goes to `auditWriter` when given
    /// (tests pass one that fails), to `store` otherwise. Sessions' watermark variants are chosen under
    /// `watermarkKey` (32 bytes, `--watermark-key-file`), or when nil under a key derived from `kek`.
    public init(
        configuration: GatewayConfiguration, store: any Store, kek: KeyEncryptionKey, engine: (any PackagingEngine)?,
        clock: any GatewayClock = SystemClock(), auditWriter: (any AuditWriting)? = nil,
        watermarkKey: [UInt8]? = nil, log: @escaping @Sendable (String) -> Void
    ) throws(StoreError) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.log = log
        signer = SessionTokenSigner(key: kek.derivedKey(for: "guardplay/session-token/v1"))
        watermark = SessionWatermark(key: watermarkKey ?? kek.derivedKey(for: "guardplay/watermark/v1"))
        watermarkRequests = metrics.family(
            "guardplay_watermark_segment_requests_total", .counter,
            help: "Requests for watermarked segment variants by outcome (granted or the refusal code).")
        keyRequests = metrics.family(
            "guardplay_key_requests_total", .counter, help: "Key requests by outcome (granted or the refusal reason).")
        licenseRequests = metrics.family(
            "guardplay_license_requests_total", .counter,
            help: "Clear Key license requests by outcome (granted or the refusal reason).")
        audit = AuditLog(
            writer: auditWriter ?? store, capacity: configuration.auditCapacity, batchSize: configuration.auditBatch,
            countCapacity: configuration.auditCountCapacity, retention: configuration.auditRetention,
            interval: configuration.auditInterval, clock: clock, log: log)
        refusals = RefusalLimiter(
            burst: configuration.refusalBurst, rate: configuration.refusalRate, capacity: configuration.refusalClients)
        streams = StreamQuota(
            perSession: configuration.maxStreamsPerSession, perToken: configuration.maxStreamsPerToken,
            total: configuration.maxStreams)
        sessions = SessionRegistry(
            store: store, hub: events, clock: clock, leaseDuration: configuration.captureLease, log: log)
        let catalog = self.catalog
        jobs = PackagingJobs(
            store: store, catalog: catalog, engine: engine, configuration: configuration, clock: clock, log: log,
            onAssetReady: { asset in
                do {
                    let keys = try store.keys().filter { $0.assetID == asset.id }
                    try catalog.install(asset, keys: keys)
                } catch { log("catalog: \(asset.id): \(error)") }
            })
        try loadCatalog()
        try sessions.load()
        declareMetrics()
    }

    private func loadCatalog() throws(StoreError) {
        let latest = try store.latestAssetEventSeq()
        let window = EventCursor.startWindow
        let recent = try store.assetEvents(after: max(0, latest - window), orAmong: [], limit: Int(window)).map(\.seq)
        let now = clock.now()
        assetCursor.withLock { $0 = EventCursor(startingAt: latest, recent: recent, window: window, at: now) }
        let keys = try store.keys()
        for key in keys { catalog.addKey(key) }
        for asset in try store.assets() {
            do { try catalog.install(asset, keys: keys.filter { $0.assetID == asset.id }) } catch {
                log("catalog: asset \(asset.id) is not served: \(error.detail)")
            }
        }
    }

    /// The asset `id` from the catalog or, when the catalog lacks it (another node sharing the store
    /// imported or packaged it), from the store and the shared asset directory, installed for next time.
    func servedAsset(_ id: String) -> ServedAsset? {
        if let served = catalog.asset(id) { return served }
        guard store.isShared, Identifier.isValid(id), let record = try? store.asset(id) else { return nil }
        do {
            try catalog.install(record, keys: try store.keys().filter { $0.assetID == id })
        } catch {
            log("catalog: asset \(id) from the store is not served: \(error)")
            return nil
        }
        return catalog.asset(id)
    }

    /// The key `kid` and its asset's policy from the catalog or, on a miss, from the store: a key
    /// never changes for its KID, so once read it is held in memory.
    func servedKey(_ kid: String) -> (key: ServedKey, denyWhileCapturing: Bool)? {
        if let served = catalog.keyAndPolicy(kid) { return served }
        guard store.isShared, kid.utf8.count <= 64, let record = try? store.key(kid) else { return nil }
        if servedAsset(record.assetID) == nil { catalog.addKey(record) }
        return catalog.keyAndPolicy(kid)
    }

    /// Applies the asset changes other nodes sharing the store made since the last call: an asset
    /// this node serves takes its key policy from the store. An asset that cannot be read is read
    /// again at the next notification or reconnection.
    func applyAssetChanges() {
        assetCursor.withLock { cursor in
            while true {
                let events: [(seq: Int64, assetID: String)]
                do { events = try store.assetEvents(after: cursor.newest, orAmong: cursor.missing, limit: 1000) } catch
                {
                    log("store: asset events: \(error)")
                    return
                }
                let fresh = events.filter { cursor.isNew($0.seq) }
                // Each asset of the batch read once, however many events it has in it.
                var seen = Set<String>()
                for assetID in fresh.map(\.assetID) where seen.insert(assetID).inserted {
                    guard catalog.asset(assetID) != nil else { continue }
                    do {
                        if let record = try store.asset(assetID) {
                            catalog.setPolicy(asset: assetID, denyKeysWhileCapturing: record.denyKeysWhileCapturing)
                        }
                    } catch {
                        log("store: asset \(assetID): \(error)")
                        return
                    }
                }
                for event in fresh { cursor.admit(event.seq, at: clock.now()) }
                if events.count < 1000 { break }
            }
            cursor.expire(at: clock.now())
        }
    }

    /// Starts the gateway's threads.
    public func start() throws(StoreError) {
        // Other nodes' revocations and capture reports, when nodes share the store.
        listener.withLock {
            $0 = store.listen { [self] in
                sessions.applyStoredEvents()
                applyAssetChanges()
            }
        }
        audit.start()
        try jobs.start()
        sweeper.start { [self] in
            sessions.sweep()
            let now = clock.now()
            let due = lastPrune.withLock { last in
                guard now.timeIntervalSince(last) > 3600 else { return false }
                last = now
                return true
            }
            if due { _ = try? store.deleteSessions(expiredBefore: now.addingTimeInterval(-86400)) }
        }
    }

    /// Stops the gateway's threads; jobs in progress go back to the queue and the audit log is flushed.
    public func stop() {
        listener.withLock { listener in
            listener?.stop()
            listener = nil
        }
        jobs.stop()
        sweeper.stop()
        audit.stop()
    }

    /// Writes queued audit records now.
    public func flushAudit() { audit.flush() }

    /// Why the gateway should not take traffic now (its audit trail cannot be written), or nil.
    public var unreadyReason: String? {
        if !store.isReachable { return "The gateway cannot reach its database (\(store.location))." }
        return audit.failure.map { "The audit log cannot be written to the store: \($0)" }
    }

    /// Seconds a client refused for too many refusals should wait.
    public var refusalRetryAfter: Int { refusals.retryAfter }

    /// Lets lapsed capture leases turn their sessions `unknown` now (the sweeper does this ten times
    /// a second; tests with a hand-moved clock call it directly).
    public func sweepLeases() { sessions.sweep() }

    // MARK: Sessions

    /// Creates a session for `asset` lasting `ttl` seconds (the configured default when nil) and
    /// returns it with its signed token.
    public func createSession(asset: String, ttl: TimeInterval?, remote: String = "") throws(GatewayError) -> (
        session: SessionRecord, token: String
    ) {
        guard servedAsset(asset) != nil else {
            throw GatewayError(.notFound, code: "asset-not-found", detail: "No asset '\(asset)' is served here.")
        }
        let lifetime = ttl ?? configuration.sessionTTL
        guard lifetime >= 60, lifetime <= configuration.maxSessionTTL else {
            throw GatewayError(
                .invalid, code: "invalid-ttl",
                detail: "ttlSeconds must be between 60 and \(Int(configuration.maxSessionTTL)).")
        }
        let session = try sessions.create(asset: asset, ttl: lifetime)
        metrics.increment("guardplay_sessions_created_total")
        audit.record(
            AuditRecord(
                at: session.createdAt, action: "session-create", outcome: "granted", assetID: asset,
                sessionID: session.id, remote: remote))
        return (session, signer.issue(session: session.id, asset: asset, expiresAt: session.expiresAt))
    }

    /// Revokes a session: its token stops working for keys and playlists, and its event streams end.
    public func revokeSession(_ id: String, remote: String = "") throws(GatewayError) {
        guard let session = sessions.session(id) else {
            throw GatewayError(.notFound, code: "session-not-found", detail: "No session '\(id)'.")
        }
        guard try sessions.revoke(id) else {
            throw GatewayError(.conflict, code: "session-revoked", detail: "The session was already revoked.")
        }
        metrics.increment("guardplay_sessions_revoked_total")
        audit.record(
            AuditRecord(
                at: clock.now(), action: "session-revoke", outcome: "granted", assetID: session.record.assetID,
                sessionID: id, remote: remote))
    }

    /// Applies a client's capture report to its session; one observed too far from the gateway's clock
    /// (`ObservedAtWindow`) is refused with a 422 and counted, and changes nothing.
    public func reportCapture(
        session id: String, capturing: Bool, seq: UInt64, observedAt: Date
    ) throws(GatewayError) -> (outcome: CaptureReportOutcome, session: SessionSnapshot) {
        guard let current = sessions.session(id) else {
            throw GatewayError(.notFound, code: "session-not-found", detail: "No session '\(id)'.")
        }
        guard current.record.revokedAt == nil else {
            throw GatewayError(.conflict, code: "session-revoked", detail: "The session was revoked.")
        }
        do { try ObservedAtWindow(lease: configuration.captureLease).check(observedAt, now: clock.now()) } catch {
            metrics.increment("guardplay_capture_reports_total", ["result": "implausible-observed-at"])
            throw error
        }
        guard let result = sessions.reportCapture(session: id, capturing: capturing, seq: seq, observedAt: observedAt)
        else { throw GatewayError(.notFound, code: "session-not-found", detail: "No session '\(id)'.") }
        if case .outOfOrder = result.0 {
            metrics.increment("guardplay_capture_reports_total", ["result": "out-of-order"])
        } else {
            metrics.increment("guardplay_capture_reports_total", ["result": "applied"])
        }
        return result
    }

    /// Sends `command` to the session's event subscribers.
    public func send(_ command: SessionCommand, to id: String) throws(GatewayError) {
        guard let session = sessions.session(id) else {
            throw GatewayError(.notFound, code: "session-not-found", detail: "No session '\(id)'.")
        }
        guard session.record.revokedAt == nil else {
            throw GatewayError(.conflict, code: "session-revoked", detail: "The session was revoked.")
        }
        events.publish(session: id, .command(command, at: clock.now()))
    }

    /// True when `token` is a valid, unrevoked session token for session `id` (so a client may report
    /// or listen with the token it plays with).
    public func sessionToken(_ token: String?, authorizes id: String) -> Bool {
        guard case .success(let claims) = signer.verify(token, now: clock.now()), claims.sessionID == id,
            let session = sessions.session(id), session.record.revokedAt == nil
        else { return false }
        return true
    }

    /// The claims of `token` when it is a valid token of the live, unrevoked session `id` (the web
    /// player's page opens with it), or why not: a token of another session is `sessionUnknown`.
    public func sessionClaims(_ token: String?, session id: String) -> Result<SessionClaims, AccessRefusal> {
        switch signer.verify(token, now: clock.now()) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let claims):
            guard claims.sessionID == id, let session = sessions.session(id) else { return .failure(.sessionUnknown) }
            guard session.record.revokedAt == nil else { return .failure(.sessionRevoked) }
            return .success(claims)
        }
    }

    // MARK: Keys and playlists

    /// The key `kid` for the holder of `token`, or the reason it is refused. Grants and refusals of a
    /// valid token are audited one record each; refusals with no valid token are counted per minute,
    /// reason and address. Refusals are rate-limited per address (`rateLimited`); grants never are.
    public func deliverKey(kid: String, token: String?, remote: String) -> Result<[UInt8], AccessRefusal> {
        let now = clock.now()
        let claims: SessionClaims
        switch signer.verify(token, now: now) {
        case .failure(let refusal):
            return .failure(
                refuse(refusal, action: "key", kid: kid, claims: nil, assetID: nil, remote: remote, at: now))
        case .success(let verified): claims = verified
        }
        let (decision, assetID) = keyDecision(kid: kid, claims: claims)
        switch decision {
        case .success(let key):
            grant(action: "key", kid: kid, claims: claims, remote: remote, at: now)
            keyRequests.increment(labelText: "outcome=\"granted\"")
            return .success(key)
        case .failure(let refusal):
            return .failure(
                refuse(refusal, action: "key", kid: kid, claims: claims, assetID: assetID, remote: remote, at: now))
        }
    }

    /// The keys `kids` (32 hex digits each, at most `maxLicenseKIDs`) for a Clear Key license to the
    /// holder of `token`: all of them or, at the first that is refused, that refusal, with the same checks,
    /// audit records (action `license`), rate limit and policy as `deliverKey`. Only keys of the session's
    /// asset are ever returned.
    public func deliverLicense(kids: [String], token: String?, remote: String) -> Result<
        [(kid: String, key: [UInt8])], AccessRefusal
    > {
        let now = clock.now()
        let claims: SessionClaims
        switch signer.verify(token, now: now) {
        case .failure(let refusal):
            return .failure(
                refuse(refusal, action: "license", kid: kids.first, claims: nil, assetID: nil, remote: remote, at: now))
        case .success(let verified): claims = verified
        }
        var keys: [(kid: String, key: [UInt8])] = []
        for kid in kids.prefix(Self.maxLicenseKIDs) where !keys.contains(where: { $0.kid == kid }) {
            let (decision, assetID) = keyDecision(kid: kid, claims: claims)
            switch decision {
            case .success(let key): keys.append((kid, key))
            case .failure(let refusal):
                return .failure(
                    refuse(
                        refusal, action: "license", kid: kid, claims: claims, assetID: assetID, remote: remote, at: now)
                )
            }
        }
        for (kid, _) in keys { grant(action: "license", kid: kid, claims: claims, remote: remote, at: now) }
        licenseRequests.increment(labelText: "outcome=\"granted\"")
        return .success(keys)
    }

    /// The most key IDs one license request may name.
    public static let maxLicenseKIDs = 16

    /// Whether the holder of `claims` may have the key `kid` now, and the key's asset when it exists.
    private func keyDecision(kid: String, claims: SessionClaims) -> (Result<[UInt8], AccessRefusal>, String?) {
        guard let (key, denyWhileCapturing) = servedKey(kid) else { return (.failure(.keyUnknown), nil) }
        guard key.assetID == claims.assetID else { return (.failure(.wrongAsset), key.assetID) }
        guard let session = sessions.session(claims.sessionID) else { return (.failure(.sessionUnknown), key.assetID) }
        guard session.record.revokedAt == nil else { return (.failure(.sessionRevoked), key.assetID) }
        if denyWhileCapturing {
            switch session.capture.state {
            case .capturing: return (.failure(.captureActive), key.assetID)
            case .unknown: return (.failure(.captureUnknown), key.assetID)
            case .clear: break
            }
        }
        return (.success(key.key), key.assetID)
    }

    private func grant(action: String, kid: String, claims: SessionClaims, remote: String, at now: Date) {
        audit.record(
            AuditRecord(
                at: now, action: action, outcome: "granted", assetID: claims.assetID, kid: kid,
                sessionID: claims.sessionID, remote: remote))
    }

    /// Audits or counts `refusal`, counts it in `requests`, and returns it, or `rateLimited` when this
    /// address was refused too often.
    private func refuse(
        _ refusal: AccessRefusal, action: String, kid: String?, claims: SessionClaims?, assetID: String?,
        remote: String, at now: Date
    ) -> AccessRefusal {
        let requests = action == "key" ? keyRequests : licenseRequests
        let client = RefusalLimiter.client(remote)
        // Outcomes are fixed codes, so the label text needs no escaping.
        guard refusals.allow(client, now: now.timeIntervalSince1970) else {
            audit.count(reason: AccessRefusal.rateLimited.rawValue, remote: client, at: now)
            requests.increment(labelText: "outcome=\"\(AccessRefusal.rateLimited.rawValue)\"")
            return .rateLimited
        }
        if refusal.carriesValidToken {
            audit.record(
                AuditRecord(
                    at: now, action: action, outcome: "refused", reason: refusal.rawValue, assetID: assetID, kid: kid,
                    sessionID: claims?.sessionID, remote: remote))
        } else {
            audit.count(reason: refusal.rawValue, remote: client, at: now)
        }
        requests.increment(labelText: "outcome=\"\(refusal.rawValue)\"")
        return refusal
    }

    /// The playlist `name` of `asset`, rewritten for the holder of `token`; nil when there is no such
    /// playlist.
    public func playlist(asset id: String, name: String, token: String?) -> Result<String, AccessRefusal>? {
        guard let asset = servedAsset(id), let text = asset.playlists[name] else { return nil }
        switch signer.verify(token, now: clock.now()) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let claims):
            guard claims.assetID == id else { return .failure(.wrongAsset) }
            guard let session = sessions.session(claims.sessionID) else { return .failure(.sessionUnknown) }
            guard session.record.revokedAt == nil else { return .failure(.sessionRevoked) }
            let rewriter = PlaylistRewriter(
                keyPathPrefix: configuration.keyPathPrefix, kidsByURI: asset.kidsByURI, kids: asset.kids)
            let marked =
                asset.watermark?.renditions.contains(name) == true
                ? watermarkedPlaylist(text, asset: asset, rendition: name, session: claims.sessionID) : text
            return .success(rewriter.rewrite(marked, token: token ?? ""))
        }
    }

    /// A file of `asset` by its path inside the asset, or nil.
    public func file(asset id: String, name: String) -> ServedFile? {
        servedAsset(id)?.files[name]
    }

    // MARK: Assets

    /// Every served asset, ordered by ID.
    public func assets() -> [AssetSummary] {
        catalog.assetIDs.compactMap(asset)
    }

    /// The served asset `id`, or nil.
    public func asset(_ id: String) -> AssetSummary? {
        guard let served = catalog.asset(id) else { return nil }
        return AssetSummary(
            id: id, denyKeysWhileCapturing: served.record.denyKeysWhileCapturing, master: served.master,
            fileCount: served.files.count, kids: served.kids, createdAt: served.record.createdAt,
            updatedAt: served.record.updatedAt, watermark: served.watermark?.summary)
    }

    /// Serves an already packaged directory as asset `id` with the given keys (replacing an asset with
    /// the same ID). The directory must lie inside one of the configured import roots.
    public func importAsset(
        id: String, directory: String, keys: [ImportedKey], denyKeysWhileCapturing: Bool
    ) throws(GatewayError) -> AssetSummary {
        let roots = configuration.importRoots.compactMap(canonicalPath)
        guard !roots.isEmpty else {
            throw GatewayError(.forbidden, code: "import-disabled", detail: "No import roots are configured.")
        }
        guard directory.hasPrefix("/"), let resolved = canonicalPath(directory),
            roots.contains(where: { resolved == $0 || resolved.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") })
        else {
            throw GatewayError(
                .invalid, code: "import-directory-not-allowed",
                detail: "directory must be an existing absolute path inside a configured import root.")
        }
        let now = clock.now()
        let previous = try stored(log) { () throws(StoreError) in try store.asset(id) }
        let record = AssetRecord(
            id: id, directory: resolved, denyKeysWhileCapturing: denyKeysWhileCapturing,
            createdAt: previous?.createdAt ?? now, updatedAt: now)
        let keyRecords = keys.map { ContentKeyRecord(kid: $0.kid, assetID: id, key: $0.key, uri: $0.uri) }
        let existing = try stored(log) { () throws(StoreError) in try store.keys() }
        if let clash = keyRecords.first(where: { key in existing.contains { $0.kid == key.kid && $0.assetID != id } }) {
            throw GatewayError(
                .conflict, code: "kid-in-use", detail: "Key \(clash.kid) already belongs to another asset.")
        }
        let served = try AssetCatalog.scan(record, keys: keyRecords)
        guard served.master != nil else {
            throw GatewayError(.invalid, code: "no-playlist", detail: "The directory holds no top-level playlist.")
        }
        try stored(log) { () throws(StoreError) in try store.saveAsset(record, keys: keyRecords) }
        try catalog.install(record, keys: existing.filter { $0.assetID == id } + keyRecords)
        return asset(id)!
    }

    /// Changes an asset's key policy.
    public func setPolicy(asset id: String, denyKeysWhileCapturing: Bool) throws(GatewayError) -> AssetSummary {
        let changed = try stored(log) { () throws(StoreError) in
            try store.setPolicy(asset: id, denyKeysWhileCapturing: denyKeysWhileCapturing, at: clock.now())
        }
        guard changed, servedAsset(id) != nil else {
            throw GatewayError(.notFound, code: "asset-not-found", detail: "No asset '\(id)' is served here.")
        }
        catalog.setPolicy(asset: id, denyKeysWhileCapturing: denyKeysWhileCapturing)
        return asset(id)!
    }

    // MARK: API tokens

    /// The scopes a bearer token grants, or why it grants none.
    public func authenticate(bearer token: String?) -> Result<Set<Scope>, APITokenRefusal> {
        do { return try APITokens.authenticate(token, in: store) } catch {
            log("store: \(error)")
            return .failure(error.isUnavailable ? .storeUnavailable : .invalid)
        }
    }

    // MARK: Metrics

    private func declareMetrics() {
        metrics.declare("guardplay_sessions_created_total", .counter, help: "Playback sessions created.")
        metrics.declare("guardplay_sessions_revoked_total", .counter, help: "Playback sessions revoked.")
        metrics.declare("guardplay_capture_reports_total", .counter, help: "Capture reports by result.")
        metrics.gauge("guardplay_sessions", help: "Unexpired sessions held in memory.") { [sessions] in
            Double(sessions.count)
        }
        for state in CaptureState.allCases {
            metrics.gauge(
                "guardplay_sessions_by_capture_state", ["state": state.rawValue],
                help: "Live sessions by capture state."
            ) { [sessions] in Double(sessions.countByCaptureState()[state] ?? 0) }
        }
        metrics.gauge("guardplay_audit_backlog", help: "Audit records waiting to be written.") { [audit] in
            Double(audit.backlog)
        }
        metrics.counter(
            "guardplay_audit_dropped_total",
            help: "Audit records dropped because the queue was full (the store failing)."
        ) { [audit] in Double(audit.dropped) }
        metrics.gauge("guardplay_audit_store_failing", help: "1 while audit records cannot be written to the store.") {
            [audit] in audit.failure == nil ? 0 : 1
        }
        metrics.gauge("guardplay_store_bytes", help: "Bytes the database takes on disk, write-ahead log included.") {
            [store] in Double(store.sizeInBytes)
        }
        metrics.gauge("guardplay_refusal_limiter_clients", help: "Client addresses the refusal rate limit tracks.") {
            [refusals] in Double(refusals.count)
        }
        metrics.gauge("guardplay_event_subscribers", help: "Open session event streams.") { [events] in
            Double(events.subscriberCount)
        }
        metrics.gauge("guardplay_assets", help: "Assets served.") { [catalog] in Double(catalog.assetIDs.count) }
        for state in JobState.allCases {
            metrics.gauge("guardplay_packaging_jobs", ["state": state.rawValue], help: "Packaging jobs by state.") {
                [store] in Double((try? store.jobCounts())?[state] ?? 0)
            }
        }
    }
}
