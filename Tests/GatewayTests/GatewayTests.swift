import Foundation
import Gateway
import Store
import Synchronization
import Testing

@Suite struct KeyDeliveryTests {
    @Test func grantsTheKeyToAValidSessionAndAuditsIt() throws {
        let fixture = try GatewayFixture()
        let (session, token) = try fixture.gateway.createSession(asset: "clip", ttl: nil)
        #expect(fixture.gateway.deliverKey(kid: clipKID, token: token, remote: "10.0.0.1") == .success(clipKey))
        fixture.gateway.flushAudit()
        let audit = try fixture.store.recentAudit(limit: 1)
        #expect(audit.first?.action == "key" && audit.first?.outcome == "granted")
        #expect(
            audit.first?.sessionID == session.id && audit.first?.kid == clipKID && audit.first?.remote == "10.0.0.1")
    }

    @Test func refusesEachBadTokenWithItsOwnReasonAndAuditsIt() throws {
        let fixture = try GatewayFixture()
        let gateway = fixture.gateway
        let (_, token) = try gateway.createSession(asset: "clip", ttl: 3600)
        #expect(gateway.deliverKey(kid: clipKID, token: nil, remote: "") == .failure(.tokenMissing))
        #expect(gateway.deliverKey(kid: clipKID, token: "nonsense", remote: "") == .failure(.tokenMalformed))
        let forged = token.replacingOccurrences(of: ".clip.", with: ".clop.")
        #expect(gateway.deliverKey(kid: clipKID, token: forged, remote: "") == .failure(.tokenTampered))
        #expect(
            gateway.deliverKey(kid: "ffffffffffffffffffffffffffffffff", token: token, remote: "")
                == .failure(.keyUnknown))

        // A token for another asset.
        let directory = try writePackagedAsset(in: fixture.scratch, directory: "imports/song", keyURI: "k.bin")
        _ = try gateway.importAsset(
            id: "song", directory: directory,
            keys: [ImportedKey(kid: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", key: Array(repeating: 9, count: 16), uri: nil)],
            denyKeysWhileCapturing: false)
        let (_, songToken) = try gateway.createSession(asset: "song", ttl: nil)
        #expect(gateway.deliverKey(kid: clipKID, token: songToken, remote: "") == .failure(.wrongAsset))

        fixture.clock.advance(3600)
        #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "") == .failure(.tokenExpired))

        // Refusals of a valid token are audited one by one; those without one are counted.
        gateway.flushAudit()
        let reasons = try fixture.store.recentAudit(limit: 20).filter { $0.action == "key" }.compactMap(\.reason)
        #expect(reasons.reversed() == ["key-unknown", "token-wrong-asset"])
        #expect(
            Set(try fixture.store.refusalCounts().map(\.reason)) == [
                "token-missing", "token-malformed", "token-tampered", "token-expired",
            ])
        #expect(fixture.gateway.metrics.value("guardplay_key_requests_total", ["outcome": "token-expired"]) == 1)
    }

    @Test func refusesARevokedSession() throws {
        let fixture = try GatewayFixture()
        let (session, token) = try fixture.gateway.createSession(asset: "clip", ttl: nil)
        try fixture.gateway.revokeSession(session.id)
        #expect(fixture.gateway.deliverKey(kid: clipKID, token: token, remote: "") == .failure(.sessionRevoked))
        #expect(fixture.gateway.playlist(asset: "clip", name: "master.m3u8", token: token) == .failure(.sessionRevoked))
        #expect(throws: GatewayError.self) { try fixture.gateway.revokeSession(session.id) }
    }

    @Test func withholdsKeysWhileCapturingOrUnknownWhenThePolicySaysSo() throws {
        let fixture = try GatewayFixture()
        let gateway = fixture.gateway
        let (session, token) = try gateway.createSession(asset: "clip", ttl: nil)
        // Without the policy, capture state does not matter.
        #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "") == .success(clipKey))
        _ = try gateway.setPolicy(asset: "clip", denyKeysWhileCapturing: true)
        #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "") == .failure(.captureUnknown))
        _ = try gateway.reportCapture(session: session.id, capturing: false, seq: 1, observedAt: fixture.clock.now())
        #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "") == .success(clipKey))
        _ = try gateway.reportCapture(session: session.id, capturing: true, seq: 2, observedAt: fixture.clock.now())
        #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "") == .failure(.captureActive))
        _ = try gateway.reportCapture(session: session.id, capturing: false, seq: 3, observedAt: fixture.clock.now())
        fixture.clock.advance(10)
        gateway.sweepLeases()
        #expect(gateway.deliverKey(kid: clipKID, token: token, remote: "") == .failure(.captureUnknown))
    }

    @Test func keysSurviveARestartUnderTheSameKEK() throws {
        let fixture = try GatewayFixture()
        let (_, token) = try fixture.gateway.createSession(asset: "clip", ttl: nil)
        let reopened = try Gateway(
            configuration: fixture.gateway.configuration,
            store: SQLiteStore(directory: fixture.scratch.path + "/data", kek: testKEK),
            kek: testKEK, engine: nil, clock: fixture.clock, log: { _ in })
        #expect(reopened.deliverKey(kid: clipKID, token: token, remote: "") == .success(clipKey))
    }
}

@Suite struct PlaylistServingTests {
    @Test func rewritesPlaylistsForTheSessionAndIndexesOnlyMedia() throws {
        let fixture = try GatewayFixture()
        let (_, token) = try fixture.gateway.createSession(asset: "clip", ttl: nil)
        guard case .success(let media)? = fixture.gateway.playlist(asset: "clip", name: "media.m3u8", token: token)
        else {
            Issue.record("no media playlist")
            return
        }
        #expect(media.contains("URI=\"/v1/keys/\(clipKID)?token=\(token)\""))
        #expect(media.contains("\nseg0.ts\n"))
        guard case .success(let master)? = fixture.gateway.playlist(asset: "clip", name: "master.m3u8", token: token)
        else {
            Issue.record("no master playlist")
            return
        }
        #expect(master.contains("media.m3u8?token=\(token)"))
        #expect(fixture.gateway.playlist(asset: "clip", name: "master.m3u8", token: nil) == .failure(.tokenMissing))
        #expect(fixture.gateway.playlist(asset: "clip", name: "seg0.ts", token: token) == nil)
        #expect(fixture.gateway.file(asset: "clip", name: "seg0.ts")?.size == 1880)
        #expect(fixture.gateway.file(asset: "clip", name: "seg0.ts")?.contentType == "video/mp2t")
        #expect(fixture.gateway.file(asset: "clip", name: "key.bin") == nil)
        #expect(fixture.gateway.asset("clip")?.master == "master.m3u8")
    }

    @Test func importsOnlyFromConfiguredRoots() throws {
        let fixture = try GatewayFixture()
        let outside = try writePackagedAsset(in: fixture.scratch, directory: "elsewhere/x", keyURI: "k")
        for directory in [outside, fixture.scratch.path + "/imports/../elsewhere/x", "relative/path", "/nonexistent"] {
            #expect(throws: GatewayError.self) {
                _ = try fixture.gateway.importAsset(
                    id: "x", directory: directory, keys: [], denyKeysWhileCapturing: false)
            }
        }
        try FileManager.default.createSymbolicLink(
            atPath: fixture.scratch.path + "/imports/link", withDestinationPath: outside)
        #expect(throws: GatewayError.self) {
            _ = try fixture.gateway.importAsset(
                id: "x", directory: fixture.scratch.path + "/imports/link", keys: [], denyKeysWhileCapturing: false)
        }
    }
}

@Suite struct SessionEventTests {
    @Test func publishesCaptureChangesCommandsAndRevocation() throws {
        let fixture = try GatewayFixture { $0.captureLease = 5 }
        let gateway = fixture.gateway
        let (session, _) = try gateway.createSession(asset: "clip", ttl: nil)
        let received = Mutex([SessionEvent]())
        _ = gateway.events.subscribe(session: session.id) { event, _ in
            received.withLock { $0.append(event) }
            return true
        }
        let now = fixture.clock.now()
        _ = try gateway.reportCapture(session: session.id, capturing: true, seq: 1, observedAt: now)
        let (outcome, _) = try gateway.reportCapture(session: session.id, capturing: false, seq: 1, observedAt: now)
        #expect(outcome == .outOfOrder(lastSeq: 1))
        try gateway.send(.pause, to: session.id)
        fixture.clock.advance(5)
        gateway.sweepLeases()
        try gateway.revokeSession(session.id)
        let events = received.withLock { $0 }
        guard events.count == 4, case .captureState(let capturing) = events[0], case .command(.pause, _) = events[1],
            case .captureState(let lapsed) = events[2], case .revoked = events[3]
        else {
            Issue.record("unexpected events \(events)")
            return
        }
        #expect(capturing.state == .capturing && capturing.seq == 1)
        #expect(lapsed.state == .unknown && lapsed.reason == "lease-lapsed")
    }

    @Test func refusesReportsForUnknownOrRevokedSessions() throws {
        let fixture = try GatewayFixture()
        #expect(throws: GatewayError.self) {
            _ = try fixture.gateway.reportCapture(session: "nope", capturing: true, seq: 1, observedAt: Date())
        }
        let (session, token) = try fixture.gateway.createSession(asset: "clip", ttl: nil)
        #expect(fixture.gateway.sessionToken(token, authorizes: session.id))
        #expect(!fixture.gateway.sessionToken(token, authorizes: "ses_other"))
        try fixture.gateway.revokeSession(session.id)
        #expect(!fixture.gateway.sessionToken(token, authorizes: session.id))
        #expect(throws: GatewayError.self) {
            _ = try fixture.gateway.reportCapture(session: session.id, capturing: true, seq: 1, observedAt: Date())
        }
    }
}

@Suite struct APITokenTests {
    @Test func authenticatesByHashAndHonoursScopesAndRevocation() throws {
        let fixture = try GatewayFixture()
        let (token, record) = try APITokens.create(in: fixture.store, scopes: [.control], name: "ops")
        #expect(!token.contains(record.secretHash.map { String(format: "%02x", $0) }.joined()))
        #expect(fixture.gateway.authenticate(bearer: token) == .success([.control]))
        #expect(fixture.gateway.authenticate(bearer: nil) == .failure(.missing))
        var wrong = Array(token)
        wrong[wrong.count - 1] = wrong[wrong.count - 1] == "0" ? "1" : "0"
        #expect(fixture.gateway.authenticate(bearer: String(wrong)) == .failure(.invalid))
        #expect(fixture.gateway.authenticate(bearer: "gp_zz_zz") == .failure(.invalid))
        _ = try fixture.store.revokeToken(record.id, at: Date())
        #expect(fixture.gateway.authenticate(bearer: token) == .failure(.revoked))
        #expect(APITokens.allows([.admin], .package))
        #expect(!APITokens.allows([.control], .package))
        #expect(APITokens.parseScopes("control, package") == [.control, .package])
        #expect(APITokens.parseScopes("control,root") == nil)
    }
}
