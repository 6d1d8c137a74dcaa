import Crypto
import Foundation
import PostgresTestSupport
import Testing

@testable import Store

/// The two databases every store test runs against.
typealias Backend = StoreBackend

extension StoreBackend: CustomTestStringConvertible {
    public var testDescription: String { rawValue }
}

/// A fresh store: SQLite in a temporary directory, removed when released, or a new database of its
/// own on the test process's PostgreSQL cluster. A test that takes `store` out of it keeps the holder
/// alive to its end (`defer { withExtendedLifetime(temporary) {} }`): otherwise the holder may be
/// released at once and remove the directory under the open store.
final class TemporaryStore {
    let backend: Backend
    let directory: String
    let url: String
    let kek: KeyEncryptionKey
    let store: SQLStore

    init(_ backend: Backend = .sqlite, kek: KeyEncryptionKey? = nil) throws {
        self.backend = backend
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)").path
        url = backend == .postgres ? try PostgresCluster.shared.get().createDatabase() : ""
        self.kek = try kek ?? KeyEncryptionKey(bytes: SecureRandom.bytes(32))
        store = try Self.open(backend, directory: directory, url: url, kek: self.kek)
    }

    /// Opens the same database again, as a restarted process (or another node) would.
    func reopen(kek: KeyEncryptionKey? = nil) throws -> SQLStore {
        try Self.open(backend, directory: directory, url: url, kek: kek ?? self.kek)
    }

    /// Runs `sql` on the store's own connection, behind the store's back.
    func execute(_ sql: String) throws {
        try store.with { database throws(StoreError) in try database.execute(sql) }
    }

    /// The first column of the first row of `sql`.
    func scalar(_ sql: String) throws -> SQLValue? {
        try store.with { database throws(StoreError) in try database.query(sql).first?.first }
    }

    private static func open(
        _ backend: Backend, directory: String, url: String, kek: KeyEncryptionKey
    ) throws -> SQLStore {
        switch backend {
        case .sqlite: try SQLiteStore(directory: directory, kek: kek)
        case .postgres: try PostgresStore(url: url, kek: kek)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

let epoch = Date(timeIntervalSince1970: 1_700_000_000)

func job(_ id: String, key: String? = nil, asset: String = "clip") -> JobRecord {
    JobRecord(
        id: id, idempotencyKey: key, fingerprint: "f-\(id)", input: "media/clip.mp4", assetID: asset,
        denyKeysWhileCapturing: false, kid: nil, createdAt: epoch, updatedAt: epoch)
}

@Suite struct StoreTests {
    @Test func opensInWALModeAtTheNewestSchemaAndReopens() throws {
        let temporary = try TemporaryStore()
        #expect(try temporary.store.schemaVersion() == SQLiteMigrations.all.count)
        #expect(try temporary.scalar("PRAGMA journal_mode")?.text == "wal")
        try temporary.store.insertSession(
            SessionRecord(id: "s1", assetID: "clip", createdAt: epoch, expiresAt: epoch + 60))
        let reopened = try SQLiteStore(directory: temporary.directory, kek: temporary.kek)
        #expect(try reopened.sessions(unexpiredAt: epoch).map(\.id) == ["s1"])
        #expect(try reopened.integrityCheck() == "ok")
    }

    @Test func opensPostgreSQLAtTheNewestSchemaAndReopens() throws {
        let temporary = try TemporaryStore(.postgres)
        #expect(try temporary.store.schemaVersion() == PostgresMigrations.all.count)
        try temporary.store.insertSession(
            SessionRecord(id: "s1", assetID: "clip", createdAt: epoch, expiresAt: epoch + 60))
        let reopened = try temporary.reopen()
        #expect(try reopened.schemaVersion() == PostgresMigrations.all.count)
        #expect(try reopened.sessions(unexpiredAt: epoch).map(\.id) == ["s1"])
        #expect(try reopened.session("s1")?.expiresAt == epoch + 60)
        #expect(
            try temporary.scalar("SELECT count(*) FROM guardplay_schema")?.integer
                == Int64(PostgresMigrations.all.count))
        #expect(temporary.store.sizeInBytes > 0)
    }

    @Test(arguments: Backend.allCases) func refusesADatabaseFromANewerBuild(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        switch backend {
        case .sqlite: try temporary.execute("PRAGMA user_version = 99")
        case .postgres: try temporary.execute("INSERT INTO guardplay_schema (version) VALUES (99)")
        }
        #expect {
            _ = try temporary.reopen()
        } throws: { error in
            "\(error)".contains("schema version 99, newer than this build knows")
        }
    }

    @Test(arguments: Backend.allCases) func wrapsContentKeysUnderTheKEKAndBindsThemToTheirKID(_ backend: Backend) throws
    {
        let temporary = try TemporaryStore(backend)
        let key = try SecureRandom.bytes(16)
        let record = ContentKeyRecord(
            kid: "00112233445566778899aabbccddeeff", assetID: "clip", key: key, uri: "key.bin")
        try temporary.store.saveAsset(
            AssetRecord(
                id: "clip", directory: "/srv/clip", denyKeysWhileCapturing: true, createdAt: epoch, updatedAt: epoch),
            keys: [record])
        #expect(try temporary.store.keys() == [record])
        #expect(try temporary.store.key(record.kid) == record)
        #expect(try temporary.store.key("ffeeddccbbaa99887766554433221100") == nil)
        #expect(try temporary.store.asset("clip")?.denyKeysWhileCapturing == true)

        let wrapped = try #require(try temporary.scalar("SELECT wrapped FROM content_keys")?.blob)
        #expect(wrapped.count == AESGCM.nonceSize + 16 + AESGCM.tagSize)
        #expect(!wrapped.indices.dropLast(15).contains { Array(wrapped[$0..<$0 + 16]) == key })

        // Moving the wrapped key to another kid breaks it.
        try temporary.execute("UPDATE content_keys SET kid = 'ffeeddccbbaa99887766554433221100'")
        #expect { try temporary.store.keys() } throws: { "\($0)".contains("does not open") }

        // Saving a key again replaces it.
        try temporary.store.saveKey(ContentKeyRecord(kid: "0123", assetID: "clip", key: key))
        try temporary.store.saveKey(ContentKeyRecord(kid: "0123", assetID: "clip", key: Array(key.reversed())))
        #expect(try temporary.store.key("0123")?.key == Array(key.reversed()))
        if backend == .sqlite {
            // A different KEK cannot open it either (PostgreSQL refuses such a node at once: see below).
            let other = try temporary.reopen(kek: KeyEncryptionKey(bytes: SecureRandom.bytes(32)))
            #expect { try other.keys() } throws: { "\($0)".contains("wrong key-encryption key") }
        }
    }

    @Test func refusesAPostgreSQLNodeWithAnotherKEK() throws {
        let temporary = try TemporaryStore(.postgres)
        try temporary.store.saveKey(ContentKeyRecord(kid: "0123", assetID: "clip", key: SecureRandom.bytes(16)))
        #expect {
            _ = try temporary.reopen(kek: KeyEncryptionKey(bytes: SecureRandom.bytes(32)))
        } throws: { error in
            "\(error)".contains("this node's key-encryption key is not the one the database's keys are wrapped under")
        }
        // The check value is an HMAC under the KEK, never the KEK.
        let check = try #require(try temporary.scalar("SELECT value FROM guardplay_kek_check")?.blob)
        #expect(check.count == 32 && check != temporary.kek.bytes)
        #expect(try temporary.reopen().key("0123") != nil)
    }

    @Test(arguments: Backend.allCases) func prefixesErrorsWithTheOperationAndTheDatabasesText(_ backend: Backend) throws
    {
        let temporary = try TemporaryStore(backend)
        let session = SessionRecord(id: "dup", assetID: "clip", createdAt: epoch, expiresAt: epoch + 60)
        try temporary.store.insertSession(session)
        #expect {
            try temporary.store.insertSession(session)
        } throws: { error in
            let text = "\(error)"
            return switch backend {
            case .sqlite:
                text.hasPrefix("sqlite3_step(INSERT INTO sessions") && text.contains("UNIQUE constraint failed")
            case .postgres:
                text.hasPrefix("PQexecParams(INSERT INTO sessions")
                    && text.contains("duplicate key value violates unique constraint")
                    && text.contains("SQLSTATE 23505")
                    && !(error as? StoreError)!.isUnavailable
            }
        }
    }

    @Test(arguments: Backend.allCases) func revokesSessionsOnceAndForgetsExpiredOnes(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        let store = temporary.store
        try store.insertSession(SessionRecord(id: "a", assetID: "clip", createdAt: epoch, expiresAt: epoch + 60))
        try store.insertSession(SessionRecord(id: "b", assetID: "clip", createdAt: epoch, expiresAt: epoch + 10))
        #expect(try store.revokeSession("a", at: epoch + 1))
        #expect(try !store.revokeSession("a", at: epoch + 2))
        #expect(try !store.revokeSession("missing", at: epoch + 2))
        #expect(try store.sessions(unexpiredAt: epoch + 5).map(\.id).sorted() == ["a", "b"])
        #expect(try store.sessions(unexpiredAt: epoch + 5).first { $0.id == "a" }?.revokedAt == epoch + 1)
        #expect(try store.deleteSessions(expiredBefore: epoch + 20) == 1)
        #expect(try store.sessions(unexpiredAt: epoch).map(\.id) == ["a"])
    }

    @Test(arguments: Backend.allCases) func listsAnAssetsSessionIDsRevokedAndExpiredIncluded(_ backend: Backend) throws
    {
        let temporary = try TemporaryStore(backend)
        let store = temporary.store
        for (id, asset) in [("s2", "clip"), ("s1", "clip"), ("t1", "other"), ("s3", "clip")] {
            try store.insertSession(SessionRecord(id: id, assetID: asset, createdAt: epoch, expiresAt: epoch + 60))
        }
        #expect(try store.revokeSession("s3", at: epoch + 1))
        #expect(try store.sessionIDs(asset: "clip") == ["s1", "s2", "s3"])
        #expect(try store.sessionIDs(asset: "other") == ["t1"])
        #expect(try store.sessionIDs(asset: "none").isEmpty)
        #expect(try store.deleteSessions(expiredBefore: epoch + 61) == 4)
        #expect(try store.sessionIDs(asset: "clip").isEmpty)
    }

    @Test(arguments: Backend.allCases) func storesTokensHashedAndRevokesThem(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        let record = APITokenRecord(
            id: "abc", secretHash: Digest.sha256(Array("secret".utf8)), scopes: ["control", "package"], name: "ci",
            createdAt: epoch)
        try temporary.store.insertToken(record)
        #expect(try temporary.store.token("abc") == record)
        #expect(try temporary.store.revokeToken("abc", at: epoch + 1))
        #expect(try temporary.store.token("abc")?.revokedAt == epoch + 1)
        #expect(try temporary.store.tokens().count == 1)
    }

    @Test(arguments: Backend.allCases) func returnsTheSameJobForARepeatedIdempotencyKey(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        guard case .created(let first) = try temporary.store.insertJob(job("j1", key: "k")) else {
            Issue.record("first insert did not create")
            return
        }
        #expect(try temporary.store.insertJob(job("j2", key: "k")) == .existing(first))
        #expect(try temporary.store.job("j2") == nil)
        guard case .created = try temporary.store.insertJob(job("j3")) else {
            Issue.record("a job without a key did not create")
            return
        }
    }

    @Test(arguments: Backend.allCases) func keepsAJobsOptionsThroughAClaimAndAReopen(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        var asked = job("j1")
        asked.options = "container=fmp4 encryption=cenc keyPeriod=3"
        _ = try temporary.store.insertJob(asked)
        _ = try temporary.store.insertJob(job("j2"))
        #expect(try temporary.store.claimNextJob(at: epoch + 1)?.options == asked.options)
        let reopened = try temporary.reopen()
        #expect(try reopened.job("j1")?.options == asked.options && reopened.job("j2")?.options == nil)
    }

    @Test(arguments: Backend.allCases) func claimsJobsInOrderAndNeverOverwritesAFinalState(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        _ = try store.insertJob(job("j1"))
        _ = try store.insertJob(job("j2"))
        let claimed = try #require(try store.claimNextJob(at: epoch + 1))
        #expect(claimed.id == "j1" && claimed.state == .running && claimed.attempts == 1)
        try store.setJobProgress("j1", progress: 0.5, at: epoch + 2)
        #expect(try store.job("j1")?.progress == 0.5)
        #expect(try store.finishJob("j1", state: .cancelled, at: epoch + 3))
        #expect(try !store.finishJob("j1", state: .succeeded, output: "/x", at: epoch + 4))
        #expect(try store.job("j1")?.state == .cancelled)
        #expect(try store.claimNextJob(at: epoch + 5)?.id == "j2")
        #expect(try store.claimNextJob(at: epoch + 6) == nil)
    }

    @Test(arguments: Backend.allCases) func requeuesInterruptedJobsUntilTheirAttemptsRunOut(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        // On PostgreSQL a job is left only once its lease has run out by the database's clock; until
        // then another node may be running it.
        let lapse = { () throws in
            guard backend == .postgres else { return }
            #expect(try store.recoverInterruptedJobs(maxAttempts: 2, at: epoch).isEmpty)
            try temporary.execute("UPDATE packaging_jobs SET lease_expires_at = extract(epoch FROM now()) - 1")
        }
        _ = try store.insertJob(job("j1"))
        _ = try store.claimNextJob(at: epoch)
        try lapse()
        #expect(try store.recoverInterruptedJobs(maxAttempts: 2, at: epoch + 1).map(\.state) == [.queued])
        _ = try store.claimNextJob(at: epoch + 2)
        try lapse()
        let failed = try store.recoverInterruptedJobs(maxAttempts: 2, at: epoch + 3)
        #expect(failed.map(\.state) == [.failed])
        #expect(failed.first?.error == "interrupted by a restart after 2 attempts")
        #expect(try store.jobs(in: .running).isEmpty)
    }

    @Test(arguments: Backend.allCases) func numbersSessionEventsPerSessionAndReplaysTheAnnouncedOnes(
        _ backend: Backend
    ) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        for id in ["s1", "s2"] {
            try store.insertSession(SessionRecord(id: id, assetID: "clip", createdAt: epoch, expiresAt: epoch + 60))
        }
        let appended = try [("s1", true), ("s2", true), ("s1", false), ("s1", true)].map { id, announced in
            try store.appendSessionEvent(
                SessionEventRecord(
                    sessionID: id, kind: .capture, state: "clear", at: epoch, origin: "n", announced: announced))
        }
        #expect(appended == [1, 1, 2, 3])
        // A resumed stream gets the session's announced events after its ID, not the renewal.
        #expect(try store.sessionEvents(session: "s1", after: 0, limit: 10).map(\.sessionSeq) == [1, 3])
        #expect(try store.sessionEvents(session: "s1", after: 1, limit: 10).map(\.sessionSeq) == [3])
        #expect(try store.sessionEvents(session: "s1", after: 0, limit: 1).map(\.sessionSeq) == [1])
        // An event of a session that does not exist gets no number.
        #expect(
            try store.appendSessionEvent(SessionEventRecord(sessionID: "none", kind: .revoked, at: epoch, origin: "n"))
                == nil)
        switch backend {
        case .sqlite:
            // No other node reads a SQLite store.
            #expect(try store.sessionEvents(after: 0, orAmong: [], limit: 10).isEmpty)
        case .postgres:
            // Every node still reads every event, renewals included.
            let all = try store.sessionEvents(after: 0, orAmong: [], limit: 10)
            #expect(all.map(\.announced) == [true, true, false, true])
            // A reader that passed numbers asks for them again beside the newer ones.
            let seqs = all.map(\.seq)
            let again = try store.sessionEvents(after: seqs[2], orAmong: [seqs[0], seqs[2] + 100], limit: 10)
            #expect(again.map(\.seq) == [seqs[0], seqs[3]])
            #expect(try store.sessionEvents(after: seqs[0], orAmong: [], limit: 2).map(\.seq) == [seqs[1], seqs[2]])
        }
        // Pruned with the sessions: events from before the cut go.
        _ = try store.deleteSessions(expiredBefore: epoch + 1)
        #expect(try store.sessionEvents(session: "s1", after: 0, limit: 10).isEmpty)
    }

    @Test(arguments: Backend.allCases) func numbersAssetPolicyChangesForTheOtherNodes(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        for id in ["a", "b"] {
            try store.saveAsset(
                AssetRecord(
                    id: id, directory: "/srv/\(id)", denyKeysWhileCapturing: false, createdAt: epoch,
                    updatedAt: epoch), keys: [])
        }
        for (id, deny) in [("a", true), ("b", true), ("a", false)] {
            #expect(try store.setPolicy(asset: id, denyKeysWhileCapturing: deny, at: epoch))
        }
        #expect(try !store.setPolicy(asset: "none", denyKeysWhileCapturing: true, at: epoch))
        #expect(try store.asset("a")?.denyKeysWhileCapturing == false)
        let all = try store.assetEvents(after: 0, orAmong: [], limit: 10)
        switch backend {
        case .sqlite:
            #expect(all.isEmpty)
        case .postgres:
            #expect(all.map(\.assetID) == ["a", "b", "a"])
            #expect(try store.latestAssetEventSeq() == all[2].seq)
            let again = try store.assetEvents(after: all[1].seq, orAmong: [all[0].seq], limit: 10)
            #expect(again.map(\.seq) == [all[0].seq, all[2].seq])
            #expect(try store.assetEvents(after: 0, orAmong: [], limit: 1).map(\.seq) == [all[0].seq])
        }
    }

    @Test(arguments: Backend.allCases) func givesEachSessionsNewestCaptureReportWhileItsLeaseHoldsByTheDatabase(
        _ backend: Backend
    ) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        let now = Date()
        for id in ["held", "lapsed", "silent"] {
            try store.insertSession(SessionRecord(id: id, assetID: "clip", createdAt: now, expiresAt: now + 600))
        }
        let report = { (id: String, state: String, seq: Int64, lease: Date) in
            _ = try store.appendSessionEvent(
                SessionEventRecord(
                    sessionID: id, kind: .capture, state: state, reason: "reported", since: now, reportSeq: seq,
                    observedAt: now, leaseExpiresAt: lease, at: now, origin: "n", announced: true))
        }
        // "held": an older report, then a newer one whose lease holds; "lapsed": a newer one whose lease
        // ran out, after one whose lease would still hold; "silent": none, and a revocation.
        try report("held", "capturing", 1, now + 600)
        try report("held", "clear", 2, now + 600)
        try report("lapsed", "clear", 1, now + 600)
        try report("lapsed", "capturing", 2, now - 1)
        try store.appendSessionEvent(SessionEventRecord(sessionID: "silent", kind: .revoked, at: now, origin: "n"))
        switch backend {
        case .sqlite:
            #expect(try store.liveCaptureEvents(session: nil).isEmpty)
        case .postgres:
            let all = try store.liveCaptureEvents(session: nil)
            #expect(all.map(\.sessionID) == ["held"] && all.first?.state == "clear" && all.first?.reportSeq == 2)
            #expect(try store.liveCaptureEvents(session: "held").map(\.reportSeq) == [2])
            #expect(try store.liveCaptureEvents(session: "lapsed").isEmpty)
            #expect(try store.liveCaptureEvents(session: "silent").isEmpty)
        }
    }

    @Test(arguments: Backend.allCases) func renewsAJobsLeaseOnlyForTheAttemptThatHoldsIt(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        _ = try store.insertJob(job("j1"))
        let claimed = try #require(try store.claimNextJob(at: epoch, lease: 2))
        #expect(try store.renewJobLease("j1", attempt: claimed.attempts, lease: 60))
        #expect(try !store.renewJobLease("j1", attempt: claimed.attempts + 1, lease: 60))
        if backend == .postgres {
            // The lease is the database's clock plus the lease given, at the claim and at each renewal.
            let left = {
                try temporary.scalar("SELECT lease_expires_at - extract(epoch FROM now()) FROM packaging_jobs")?.real
                    ?? 0
            }
            #expect((50...60).contains(try left()))
            #expect(try store.renewJobLease("j1", attempt: 1, lease: 5))
            #expect((0...5).contains(try left()))
            // Lapsed and taken over: the first attempt no longer holds the job.
            try temporary.execute("UPDATE packaging_jobs SET lease_expires_at = extract(epoch FROM now()) - 1")
            #expect(try store.recoverInterruptedJobs(maxAttempts: 3, at: epoch + 1).map(\.state) == [.queued])
            #expect(try store.claimNextJob(at: epoch + 2, lease: 30)?.attempts == 2)
            #expect(try !store.renewJobLease("j1", attempt: 1, lease: 30))
        }
        _ = try store.finishJob("j1", state: .succeeded, at: epoch + 3)
        #expect(try !store.renewJobLease("j1", attempt: backend == .postgres ? 2 : 1, lease: 30))
    }

    @Test(arguments: Backend.allCases) func pagesJobsNewestFirst(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        for index in 1...5 { _ = try store.insertJob(job("j\(index)")) }
        let first = try store.jobs(before: nil, limit: 2)
        #expect(first.map(\.id) == ["j5", "j4"])
        let second = try store.jobs(before: first.last?.seq, limit: 2)
        #expect(second.map(\.id) == ["j3", "j2"])
        #expect(try store.jobs(before: second.last?.seq, limit: 2).map(\.id) == ["j1"])
    }

    @Test(arguments: Backend.allCases) func appendsAuditRecordsInBatches(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        let records = (0..<250).map { (index: Int) -> AuditRecord in
            let granted = index % 2 == 0
            return AuditRecord(
                at: epoch.addingTimeInterval(Double(index)), action: "key", outcome: granted ? "granted" : "refused",
                reason: granted ? nil : "token-expired", assetID: "clip", kid: "k", sessionID: "s", remote: "127.0.0.1")
        }
        try store.appendAudit(records)
        #expect(try store.auditCount() == 250)
        #expect(try store.recentAudit(limit: 1) == [records[249]])
    }

    @Test(arguments: Backend.allCases) func addsRefusalCountsUpPerMinuteAndPrunesBoth(_ backend: Backend) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        let minute = epoch
        let count = { (reason: String, remote: String, n: Int, at: Date) in
            AuditRefusalCount(minute: at, reason: reason, remote: remote, count: n)
        }
        try store.appendAudit([], refusals: [count("token-missing", "10.0.0.1", 5, minute)])
        try store.appendAudit(
            [AuditRecord(at: minute + 120, action: "key", outcome: "granted")],
            refusals: [
                count("token-missing", "10.0.0.1", 7, minute), count("token-missing", "10.0.0.2", 1, minute),
                count("token-missing", "10.0.0.1", 2, minute + 120),
            ])
        #expect(try store.refusalCounts().map(\.count) == [12, 1, 2])
        #expect(store.sizeInBytes > 0)
        // Everything before epoch + 60 s goes: the first minute's two rows; the record and the later row stay.
        #expect(try store.pruneAudit(before: minute + 60) == 2)
        #expect(try store.refusalCounts().map(\.count) == [2] && store.auditCount() == 1)
    }

    @Test func pipelinesABatchOfAuditRecordsInAFewRoundTrips() throws {
        let temporary = try TemporaryStore(.postgres)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        let roundTrips = { try store.with { ($0 as? PostgresConnection)?.roundTrips ?? 0 } }
        let records = (0..<1000).map { index in
            AuditRecord(at: epoch + Double(index), action: "key", outcome: "granted", kid: "k\(index)")
        }
        let refusals = (0..<3).map {
            AuditRefusalCount(minute: epoch, reason: "token-missing", remote: "10.0.0.\($0)", count: 2)
        }
        let before = try roundTrips()
        try store.appendAudit(records, refusals: refusals)
        let spent = try roundTrips() - before
        // BEGIN, COMMIT, the records' one COPY and one pipeline per 256 refusal counts, not one per row.
        #expect(spent <= 2 + 4 + 1, "\(spent) round trips")
        let reopened = try temporary.reopen()
        #expect(try reopened.auditCount() == 1000)
        #expect(try reopened.recentAudit(limit: 2).map(\.kid) == ["k999", "k998"])
        #expect(try reopened.refusalCounts().map(\.count) == [2, 2, 2])

        // A statement that fails ends the pipeline: nothing of it stays, the error names it, and the
        // connection works on.
        #expect {
            try store.with { database throws(StoreError) in
                try database.execute(
                    "INSERT INTO audit_refusals (minute, reason, remote, count) VALUES (?, ?, ?, ?)",
                    rows: [
                        [.real(1), .text("r"), .text("a"), .integer(1)],
                        [.real(1), .text("r"), .text("a"), .integer(1)],
                        [.real(2), .text("r"), .text("a"), .integer(1)],
                    ])
            }
        } throws: { error in
            "\(error)".contains("pipeline(INSERT INTO audit_refusals") && "\(error)".contains("SQLSTATE 23505")
        }
        #expect(try store.refusalCounts().count == 3)
        #expect(try store.auditCount() == 1000)
    }

    @Test(arguments: Backend.allCases) func writesABatchOfAuditRecordsAsOneStatementKeepingEveryByte(
        _ backend: Backend
    ) throws {
        let temporary = try TemporaryStore(backend)
        defer { withExtendedLifetime(temporary) {} }
        let store = temporary.store
        let statements = { try store.with { ($0 as? PostgresConnection)?.roundTrips ?? 0 } }
        // Text COPY's own characters (tab, newline, carriage return, backslash, "\N"), quotes, non-ASCII
        // and NULL values, in a batch far past one pipeline's 256 statements.
        let awkward = ["a\tb", "line\nbreak\r", #"back\slash \N"#, "it's \"quoted\"", "vidéo ✓", ""]
        let records = (0..<20_000).map { index in
            AuditRecord(
                at: epoch + Double(index) / 8, action: "key", outcome: index % 3 == 0 ? "refused" : "granted",
                reason: index % 3 == 0 ? awkward[index / 3 % awkward.count] : nil, assetID: "clip",
                kid: index % 5 == 0 ? nil : "k\(index)", sessionID: "ses_\(index % 64)",
                remote: index % 7 == 0 ? nil : "10.0.\(index % 250).1")
        }
        let before = try statements()
        try store.appendAudit(records, refusals: [])
        // BEGIN, one COPY, COMMIT; one INSERT a row took 79 pipelines here.
        let spent = try statements() - before
        if backend == .postgres { #expect(spent <= 3, "\(spent) round trips") }
        let reopened = try temporary.reopen()
        #expect(try reopened.auditCount() == records.count)
        #expect(try reopened.recentAudit(limit: records.count) == records.reversed())
        // A NUL in a value (a request's bytes) cannot fail the batch: the value ends there, as a bound
        // parameter does.
        try store.appendAudit([AuditRecord(at: epoch, action: "key", outcome: "refused", kid: "a\u{0}b")])
        #expect(try store.recentAudit(limit: 1).first?.kid == "a")
    }

    @Test func upgradesAVersion1DatabaseKeepingItsAuditRows() throws {
        let temporary = try TemporaryStore()
        try temporary.store.appendAudit([AuditRecord(at: epoch, action: "key", outcome: "granted")])
        // Version 1's schema: without version 2's refusal counts, version 3's job options and version
        // 4's session events.
        try temporary.execute(
            "DROP TABLE audit_refusals; DROP INDEX audit_by_time; ALTER TABLE packaging_jobs DROP COLUMN options; "
                + "DROP TABLE session_events; ALTER TABLE sessions DROP COLUMN event_seq; PRAGMA user_version = 1")
        let reopened = try temporary.reopen()
        #expect(try reopened.schemaVersion() == SQLiteMigrations.all.count)
        #expect(try reopened.auditCount() == 1)
        try reopened.appendAudit([], refusals: [AuditRefusalCount(minute: epoch, reason: "r", remote: "a", count: 1)])
        #expect(try reopened.refusalCounts().count == 1)
    }

    /// A PostgreSQL database from before the audit trail's BRIN index (its B-tree on `at`) is upgraded
    /// to it keeping its rows, and retention still deletes by time through it.
    @Test func upgradesPostgreSQLsAuditTimeIndexToBRINKeepingItsRows() throws {
        let temporary = try TemporaryStore(.postgres)
        let records = (0..<3).map { AuditRecord(at: epoch + Double($0) * 60, action: "key", outcome: "granted") }
        try temporary.store.appendAudit(records)
        let method =
            "SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'audit_by_time'"
        #expect(try temporary.scalar(method)?.text == "brin")
        let previous = PostgresMigrations.all.count - 1
        try temporary.execute(
            "DROP INDEX audit_by_time; CREATE INDEX audit_by_time ON audit(at); "
                + "DELETE FROM guardplay_schema WHERE version > \(previous)")
        #expect(try temporary.scalar(method)?.text == "btree")
        let reopened = try temporary.reopen()
        #expect(try reopened.schemaVersion() == PostgresMigrations.all.count)
        #expect(try temporary.scalar(method)?.text == "brin")
        #expect(try reopened.auditCount() == 3)
        #expect(try reopened.pruneAudit(before: epoch + 90) == 2)
        #expect(try reopened.recentAudit(limit: 3) == [records[2]])
    }
}

@Suite struct KeyEncryptionKeyTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kek-\(UUID().uuidString)").path

    init() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    @Test func createsAPrivateFileOnFirstUseAndReadsItBack() throws {
        let path = directory + "/kek"
        let first = try KeyEncryptionKey.load(environmentValue: nil, file: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let second = try KeyEncryptionKey.load(environmentValue: nil, file: path)
        #expect(first.bytes == second.bytes)
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test func refusesAFileOthersCanRead() throws {
        let path = directory + "/kek"
        _ = try KeyEncryptionKey.load(environmentValue: nil, file: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect {
            _ = try KeyEncryptionKey.load(environmentValue: nil, file: path)
        } throws: { "\($0)".contains("readable by others (mode 644)") }
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test func prefersTheEnvironmentAndChecksIt() throws {
        let hex = String(repeating: "ab01", count: 16)
        #expect(try KeyEncryptionKey.load(environmentValue: hex, file: directory + "/none").bytes == [UInt8](hex: hex))
        #expect(!FileManager.default.fileExists(atPath: directory + "/none"))
        #expect {
            _ = try KeyEncryptionKey.load(environmentValue: "abcd", file: directory + "/none")
        } throws: { "\($0)".contains("GUARDPLAY_KEK") && "\($0)".contains("64 hexadecimal digits") }
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test func refusesAKeyWhoseBytesAreAllTheSameFromTheEnvironmentOrAFile() throws {
        for byte in ["00", "ff", "5a"] {
            #expect {
                _ = try KeyEncryptionKey.load(
                    environmentValue: String(repeating: byte, count: 32), file: directory + "/n")
            } throws: { "\($0)".contains("GUARDPLAY_KEK") && "\($0)".contains("all 32 bytes are the same") }
        }
        let path = directory + "/kek"
        try write(String(repeating: "0", count: 64) + "\n", to: path)
        #expect {
            _ = try KeyEncryptionKey.load(environmentValue: nil, file: path)
        } throws: { "\($0)".contains(path) && "\($0)".contains("all 32 bytes are the same (00)") }
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test func refusesAFileAnotherUserOwnsUnlessItIsSystemdsCredential() throws {
        let path = directory + "/kek"
        try write(String(repeating: "ab01", count: 16), to: path)
        let other: uid_t = geteuid() == 65534 ? 65533 : 65534
        try #require(chown(path, other, getegid()) == 0, "chown needs root: \(String(cString: strerror(errno)))")
        #expect {
            _ = try KeyEncryptionKey.load(environmentValue: nil, file: path)
        } throws: { "\($0)".contains("owned by uid \(other), not by this process's user (uid \(geteuid()))") }
        #expect(throws: StoreError.self) {
            _ = try KeyEncryptionKey.check(environmentValue: nil, file: path)
        }
        // systemd's LoadCredential= file: root's, mode 0400 with a read ACL whose mask shows as 0440.
        try #require(chown(path, 0, 0) == 0 && chmod(path, 0o440) == 0)
        if geteuid() != 0 {
            #expect(throws: StoreError.self) { _ = try KeyEncryptionKey.load(environmentValue: nil, file: path) }
        }
        #expect(
            try KeyEncryptionKey.load(environmentValue: nil, file: path, credentialsDirectory: directory).bytes.count
                == 32)
        // Even there, a file others may read or anyone may write is refused.
        for (mode, message) in [
            (0o444 as mode_t, "readable by others (mode 444)"), (0o460, "writable by others (mode 460)"),
        ] {
            try #require(chmod(path, mode) == 0)
            #expect {
                _ = try KeyEncryptionKey.load(environmentValue: nil, file: path, credentialsDirectory: directory)
            } throws: { "\($0)".contains(message) }
        }
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test func refusesAFileInADirectoryOthersMayWriteToWithoutTheStickyBit() throws {
        let shared = directory + "/shared"
        try FileManager.default.createDirectory(atPath: shared + "/inner", withIntermediateDirectories: true)
        let path = shared + "/inner/kek"
        try write(String(repeating: "ab01", count: 16), to: path)
        for mode: mode_t in [0o777, 0o770] {
            try #require(chmod(shared, mode) == 0)
            for load in [
                { _ = try KeyEncryptionKey.load(environmentValue: nil, file: path) },
                { _ = try KeyEncryptionKey.check(environmentValue: nil, file: path) },
                // Not created there either.
                { _ = try KeyEncryptionKey.load(environmentValue: nil, file: shared + "/inner/new") },
            ] as [() throws -> Void] {
                #expect {
                    try load()
                } throws: {
                    "\($0)".contains("the directory \(shared) is writable by others (mode \(String(mode, radix: 8)))")
                }
            }
            #expect(!FileManager.default.fileExists(atPath: shared + "/inner/new"))
        }
        // The sticky bit (as on /tmp) keeps others from replacing the file: accepted.
        try #require(chmod(shared, 0o1777) == 0)
        #expect(try KeyEncryptionKey.load(environmentValue: nil, file: path).bytes.count == 32)
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test func refusesASymbolicLinkAsTheKeyFile() throws {
        let target = directory + "/real"
        try write(String(repeating: "ab01", count: 16), to: target)
        try FileManager.default.createSymbolicLink(atPath: directory + "/kek", withDestinationPath: target)
        #expect {
            _ = try KeyEncryptionKey.load(environmentValue: nil, file: directory + "/kek")
        } throws: { "\($0)".contains("open(\(directory)/kek)") }
        try FileManager.default.removeItem(atPath: directory)
    }

    /// Writes `text` to a new file at `path` with mode 0600.
    func write(_ text: String, to path: String) throws {
        try #require(
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
    }
}
