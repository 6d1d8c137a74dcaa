import ControlAPI
import Foundation
import Gateway
import HTTPServer
import HTTPTestSupport
import PostgresTestSupport
import Store
import Synchronization
import Testing

/// An audit writer that fails, as a full disk does, until told to heal; then it writes to the store.
final class FailingAuditWriter: AuditWriting {
    let store: SQLiteStore
    let failing = Mutex(true)
    let attempts = Mutex(0)

    init(store: SQLiteStore) { self.store = store }

    func appendAudit(_ records: [AuditRecord], refusals: [AuditRefusalCount]) throws(StoreError) {
        attempts.withLock { $0 += 1 }
        if failing.withLock({ $0 }) {
            throw StoreError(
                operation: "sqlite3_step(INSERT INTO audit …)", code: 13, message: "database or disk is full")
        }
        try store.appendAudit(records, refusals: refusals)
    }

    func pruneAudit(before date: Date) throws(StoreError) -> Int { try store.pruneAudit(before: date) }
}

@Suite struct AuditTrailTests {
    @Test func countsRefusalsWithoutAValidTokenPerMinuteReasonAndAddress() throws {
        let fixture = try GatewayFixture { $0.refusalBurst = 1000 }
        let gateway = fixture.gateway
        for _ in 0..<300 { _ = gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.1") }
        for _ in 0..<200 { _ = gateway.deliverKey(kid: clipKID, token: "x.y", remote: "10.0.0.2") }
        gateway.flushAudit()
        for _ in 0..<100 { _ = gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.1") }
        gateway.flushAudit()
        fixture.clock.advance(60)
        _ = gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.1")
        gateway.flushAudit()

        // 601 refusals: three rows (two flushes of one minute add up in one row), no audit record.
        let counts = try fixture.store.refusalCounts()
        #expect(counts.count == 3)
        #expect(counts.map(\.count) == [200, 400, 1])
        #expect(counts.map(\.reason) == ["token-malformed", "token-missing", "token-missing"])
        #expect(counts.map(\.remote) == ["10.0.0.2", "10.0.0.1", "10.0.0.1"])
        #expect(try fixture.store.recentAudit(limit: 10).filter { $0.action == "key" }.isEmpty)
        #expect(gateway.metrics.value("guardplay_key_requests_total", ["outcome": "token-missing"]) == 401)
        #expect(gateway.metrics.render().contains("guardplay_store_bytes "))
    }

    @Test func rateLimitsRefusalsPerAddressButNeverAGrant() throws {
        let fixture = try GatewayFixture {
            $0.refusalBurst = 5
            $0.refusalRate = 1
        }
        let gateway = fixture.gateway
        let (_, token) = try gateway.createSession(asset: "clip", ttl: nil)
        for _ in 0..<5 {
            #expect(gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.1") == .failure(.tokenMissing))
        }
        #expect(gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.1") == .failure(.rateLimited))
        // The same address with a valid token, and another address, are served as before.
        #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "10.0.0.1") == .success(clipKey))
        #expect(gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.2") == .failure(.tokenMissing))
        #expect(gateway.refusalRetryAfter == 1)
        fixture.clock.advance(1)
        #expect(gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.1") == .failure(.tokenMissing))
        #expect(gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.1") == .failure(.rateLimited))
        gateway.flushAudit()
        let limited = try fixture.store.refusalCounts().filter { $0.reason == "rate-limited" }
        #expect(limited.map(\.count) == [2] && limited.first?.remote == "10.0.0.1")
    }

    @Test func forgetsAddressesPastItsTableSize() throws {
        let fixture = try GatewayFixture {
            $0.refusalBurst = 2
            $0.refusalClients = 100
        }
        for index in 0..<1000 {
            _ = fixture.gateway.deliverKey(kid: clipKID, token: nil, remote: "10.1.\(index / 256).\(index % 256)")
        }
        #expect(fixture.gateway.metrics.value("guardplay_refusal_limiter_clients") <= 100)
        let rendered = fixture.gateway.metrics.render()
        #expect(rendered.contains("guardplay_refusal_limiter_clients 100\n"))
    }

    @Test func countsAnIPv6NetworkAsOneClientAndAtMostSoManyAddressesAMinute() throws {
        let fixture = try GatewayFixture {
            $0.refusalBurst = 10
            $0.auditCountCapacity = 50
        }
        let gateway = fixture.gateway
        // Every address of one /64 is one client: the limit holds across them.
        let results = (0..<20).map { gateway.deliverKey(kid: clipKID, token: nil, remote: "2001:db8:1:2::\($0 + 1)") }
        #expect(results.filter { $0 == .failure(.rateLimited) }.count == 10)
        // 200 IPv4 addresses in one minute: 50 rows of their own, the rest in one shared row.
        for index in 0..<200 { _ = gateway.deliverKey(kid: clipKID, token: nil, remote: "10.2.0.\(index)") }
        gateway.flushAudit()
        for index in 200..<250 { _ = gateway.deliverKey(kid: clipKID, token: nil, remote: "10.2.1.\(index - 200)") }
        gateway.flushAudit()
        let counts = try fixture.store.refusalCounts()
        #expect(Set(counts.map(\.remote)).count == 51)
        #expect(counts.filter { $0.remote == "2001:db8:1:2::/64" }.map(\.count).reduce(0, +) == 20)
        #expect(counts.filter { $0.remote == "*" }.map(\.count).reduce(0, +) == 201)
        #expect(counts.map(\.count).reduce(0, +) == 270)
        // A new minute starts a new allowance.
        fixture.clock.advance(60)
        _ = gateway.deliverKey(kid: clipKID, token: nil, remote: "10.3.0.1")
        gateway.flushAudit()
        #expect(try fixture.store.refusalCounts().contains { $0.remote == "10.3.0.1" })
    }

    @Test(.timeLimit(.minutes(30))) func keepsGrantingOnPostgreSQLWhileItIsAwayAndCountsWhatTheCapDrops() throws {
        // A cluster of its own, since the test stops it.
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let url = try cluster.createDatabase()
        let fixture = try GatewayFixture(postgres: url) { $0.auditCapacity = 100 }
        let gateway = fixture.gateway
        let (_, token) = try gateway.createSession(asset: "clip", ttl: nil)
        gateway.flushAudit()
        let before = try fixture.store.auditCount()

        try cluster.stop()
        // Warm keys need no database; the batches that cannot be written wait, up to the cap.
        for _ in 0..<250 {
            #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "10.0.0.1") == .success(clipKey))
        }
        gateway.flushAudit()
        #expect(gateway.metrics.value("guardplay_audit_backlog") <= 100)
        #expect(gateway.metrics.render().contains("guardplay_audit_store_failing 1\n"))
        let dropped = gateway.metrics.render().split(separator: "\n").first {
            $0.hasPrefix("guardplay_audit_dropped_total ")
        }
        let droppedCount = try #require(dropped.flatMap { Int($0.split(separator: " ")[1]) })
        #expect(droppedCount >= 150, "\(String(describing: dropped))")

        // Back: the retried batch is written, and nothing is counted twice.
        try cluster.start()
        gateway.flushAudit()
        #expect(gateway.unreadyReason == nil, "\(gateway.unreadyReason ?? "")")
        #expect(try fixture.store.auditCount() - before == 250 - droppedCount)
        // The rows are the database's: another connection sees them.
        let reopened = try PostgresStore(url: url, kek: testKEK)
        #expect(try reopened.auditCount() == fixture.store.auditCount())
    }

    @Test func keepsGrantingWithinItsQueueCapWhileTheStoreFailsAndLogsOnce() throws {
        let scratch = try Scratch()
        let writer = FailingAuditWriter(store: try SQLiteStore(directory: scratch.path + "/data", kek: testKEK))
        let fixture = try GatewayFixture(auditWriter: writer) {
            $0.auditCapacity = 100
            $0.dataDirectory = scratch.path + "/data"
        }
        let gateway = fixture.gateway
        let (_, token) = try gateway.createSession(asset: "clip", ttl: nil)
        for round in 0..<5 {
            for _ in 0..<100 {
                #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "10.0.0.1") == .success(clipKey))
            }
            gateway.flushAudit()
            #expect(gateway.metrics.value("guardplay_audit_backlog") <= 100, "round \(round)")
        }
        #expect(gateway.unreadyReason?.contains("disk is full") == true)
        #expect(gateway.metrics.render().contains("guardplay_audit_store_failing 1\n"))
        let dropped = gateway.metrics.render().split(separator: "\n").first {
            $0.hasPrefix("guardplay_audit_dropped_total ")
        }
        #expect(dropped.flatMap { Int($0.split(separator: " ")[1]) }.map { $0 >= 400 } == true)
        let failureLines = fixture.logSink.lines.withLock { $0 }.filter { $0.contains("cannot write to the store") }
        #expect(failureLines.count == 1 && writer.attempts.withLock { $0 } == 5)

        writer.failing.withLock { $0 = false }
        gateway.flushAudit()
        #expect(gateway.unreadyReason == nil)
        #expect(try writer.store.auditCount() <= 100 && writer.store.auditCount() > 0)
        #expect(fixture.logSink.lines.withLock { $0 }.contains { $0.contains("writing to the store again") })
    }

    /// At a high rate the writer does not wait for its interval: the grant that fills a batch starts
    /// the write, so each write (and the database's work for it) stays small.
    @Test func writesAFullBatchAtOnceRatherThanAtTheNextInterval() throws {
        let fixture = try GatewayFixture {
            $0.auditInterval = 3600
            $0.auditBatch = 50
        }
        let gateway = fixture.gateway
        let (_, token) = try gateway.createSession(asset: "clip", ttl: nil)
        try gateway.start()
        defer { gateway.stop() }
        // The writer's first tick (at start) takes the session record; the next is an hour away.
        #expect(eventually { (try? fixture.store.auditCount()) == 1 })
        for _ in 0..<49 { _ = gateway.deliverKey(kid: clipKID, token: token, remote: "10.0.0.1") }
        usleep(100_000)
        #expect(try fixture.store.auditCount() == 1, "49 grants, under a batch, were written before the interval")
        _ = gateway.deliverKey(kid: clipKID, token: token, remote: "10.0.0.1")
        #expect(eventually { (try? fixture.store.auditCount()) == 51 }, "a full batch waited for the interval")
    }

    @Test func prunesRecordsPastTheRetentionInTheBackground() throws {
        let fixture = try GatewayFixture {
            $0.auditRetention = 86400
            $0.auditInterval = 0.05
        }
        let gateway = fixture.gateway
        let (_, token) = try gateway.createSession(asset: "clip", ttl: nil)
        _ = gateway.deliverKey(kid: clipKID, token: token, remote: "10.0.0.1")
        _ = gateway.deliverKey(kid: clipKID, token: nil, remote: "10.0.0.1")
        gateway.flushAudit()
        #expect(try fixture.store.auditCount() == 2 && fixture.store.refusalCounts().count == 1)
        try gateway.start()
        defer { gateway.stop() }
        fixture.clock.advance(2 * 86400)
        _ = try gateway.createSession(asset: "clip", ttl: nil)
        let pruned = eventually {
            (try? fixture.store.auditCount()) == 1 && (try? fixture.store.refusalCounts().count) == 0
        }
        #expect(pruned, "records older than the retention are still there")
        #expect(try fixture.store.recentAudit(limit: 1).first?.action == "session-create")
    }

    @Test func answersReadyz503AndStillGrantsKeysOnALoopbackSocketWhileTheStoreFails() throws {
        let scratch = try Scratch()
        let writer = FailingAuditWriter(store: try SQLiteStore(directory: scratch.path + "/data", kek: testKEK))
        let fixture = try GatewayFixture(auditWriter: writer) { $0.auditInterval = 0.05 }
        let gateway = fixture.gateway
        try gateway.start()
        defer { gateway.stop() }
        let router = GatewayAPI.router(
            gateway: gateway, state: ServiceState(), publicURL: nil, corsOrigins: [], log: { _ in })
        let server = GatewayAPI.server(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), router: router)
        try server.start()
        defer { server.stop(grace: 1) }
        let (_, token) = try gateway.createSession(asset: "clip", ttl: nil)
        #expect(eventually { gateway.unreadyReason != nil })

        let ready = try exchange(port: server.port, "GET", "/readyz")
        #expect(ready.status == 503 && ready.json?["status"] as? String == "not-ready")
        #expect((ready.json?["reason"] as? String)?.contains("disk is full") == true)
        // Open to anyone: SQLite's text, not the statement.
        #expect((ready.json?["reason"] as? String)?.contains("INSERT") == false)
        for _ in 0..<50 {
            let key = try exchange(port: server.port, "GET", "/v1/keys/\(clipKID)?token=\(token)")
            #expect(key.status == 200 && key.body == clipKey)
        }
        writer.failing.withLock { $0 = false }
        #expect(eventually { (try? exchange(port: server.port, "GET", "/readyz").status) == 200 })
    }
}

@Suite struct StreamQuotaTests {
    @Test func capsStreamsPerSessionPerTokenAndInAllUntilReleased() throws {
        let quota = StreamQuota(perSession: 2, perToken: 3, total: 4)
        let first = try quota.admit(session: "a", holder: "admin").get()
        _ = try quota.admit(session: "a", holder: "admin").get()
        #expect(throws: StreamRefusal.perSession) { try quota.admit(session: "a", holder: "other").get() }
        _ = try quota.admit(session: "b", holder: "admin").get()
        #expect(throws: StreamRefusal.perToken) { try quota.admit(session: "c", holder: "admin").get() }
        _ = try quota.admit(session: "c", holder: "viewer").get()
        #expect(throws: StreamRefusal.total) { try quota.admit(session: "d", holder: "viewer").get() }
        first.release()
        first.release()
        #expect(quota.open == 3)
        _ = try quota.admit(session: "a", holder: "viewer").get()
        #expect(throws: StreamRefusal.total) { try quota.admit(session: "d", holder: "x").get() }
    }
}
