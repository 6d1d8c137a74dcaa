import ControlAPI
import Foundation
import Gateway
import HTTPServer
import Store
import Testing

/// The gateway's router over a fixture gateway, driven without a socket.
final class APIFixture {
    let fixture: GatewayFixture
    let state = ServiceState()
    let router: Router
    let adminToken: String
    let controlToken: String
    let packageToken: String

    init(engine: (any PackagingEngine)? = nil, corsOrigins: [String] = ["https://player.example"]) throws {
        fixture = try GatewayFixture(engine: engine)
        router = GatewayAPI.router(
            gateway: fixture.gateway, state: state, publicURL: nil, corsOrigins: corsOrigins, log: { _ in })
        adminToken = try APITokens.create(in: fixture.store, scopes: [.admin], name: "admin").token
        controlToken = try APITokens.create(in: fixture.store, scopes: [.control], name: "control").token
        packageToken = try APITokens.create(in: fixture.store, scopes: [.package], name: "package").token
    }

    var gateway: Gateway { fixture.gateway }

    func call(
        _ method: String, _ target: String, token: String? = nil, body: String? = nil,
        headers: [(String, String)] = []
    ) -> HTTPResponse {
        var fields = HTTPHeaders([("Host", "gw.test")] + headers)
        if let token { fields.add("Authorization", "Bearer \(token)") }
        if body != nil && !fields.contains("Content-Type") { fields.add("Content-Type", "application/json") }
        return router.respond(
            to: HTTPRequest(method: method, target: target, headers: fields, body: Array((body ?? "").utf8)))
    }

    /// A session on `clip` and its token.
    func session() throws -> (id: String, token: String) {
        let (session, token) = try gateway.createSession(asset: "clip", ttl: nil)
        return (session.id, token)
    }
}

extension HTTPResponse {
    var bytes: [UInt8] {
        if case .bytes(let bytes) = body { return bytes }
        return []
    }

    var json: JSON? { try? JSON.parse(bytes) }

    /// The problem code from the `type` of a problem+json body.
    var problemCode: String? {
        guard headers["Content-Type"] == "application/problem+json", let type = json?["type"]?.string else {
            return nil
        }
        return type.hasPrefix("/problems/") ? String(type.dropFirst(10)) : nil
    }
}

@Suite struct RouterGrammarTests {
    @Test(arguments: [
        "/v1/hls/clip/..%2fkey.bin", "/v1/hls/clip/%00", "/v1/hls/clip/../key.bin", "/v1/hls/clip//seg0.ts",
        "/v1/hls/clip/./seg0.ts", "/v1/keys/a%20b", "v1/livez", "/v1/hls/clip/seg0.ts\u{0}",
    ])
    func refusesPathsOutsideTheGrammar(_ path: String) throws {
        let api = try APIFixture()
        let response = api.call("GET", path)
        #expect(response.status == 400)
        #expect(response.problemCode == "invalid-path")
    }

    @Test(arguments: [
        "/v1/hls/clip/key.bin", "/v1/hls/clip/\(String(repeating: "a", count: 200)).ts",
        "/v1/keys/\(String(repeating: "a", count: 65))", "/v1/nothing", "/v1/hls/clip/a/b/c.ts", "/v1/hls/clip/.hidden",
    ])
    func answers404OutsideTheRoutesAndIndex(_ path: String) throws {
        let api = try APIFixture()
        #expect(api.call("GET", path).status == 404)
    }

    @Test(arguments: ["token=%zz", "token=%00", "token=a&token=b", "token=%ff%fe"])
    func refusesMalformedQueries(_ query: String) throws {
        let api = try APIFixture()
        let response = api.call("GET", "/v1/keys/\(clipKID)?\(query)")
        #expect(response.status == 400 && response.problemCode == "invalid-query")
    }

    @Test func answers405WithTheAllowedMethods() throws {
        let api = try APIFixture()
        let response = api.call("PATCH", "/v1/sessions", token: api.adminToken)
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "OPTIONS, POST")
        #expect(api.call("HEAD", "/livez").status == 200)
    }
}

@Suite struct RouterAuthTests {
    @Test func needsAnAPITokenWithTheRightScope() throws {
        let api = try APIFixture()
        let body = #"{"asset":"clip"}"#
        #expect(api.call("POST", "/v1/sessions", body: body).problemCode == "api-token-missing")
        #expect(api.call("POST", "/v1/sessions", token: "gp_nope", body: body).problemCode == "api-token-invalid")
        let wrongScope = api.call("POST", "/v1/sessions", token: api.packageToken, body: body)
        #expect(wrongScope.status == 403 && wrongScope.problemCode == "insufficient-scope")
        #expect(api.call("POST", "/v1/sessions", token: api.controlToken, body: body).status == 201)
        #expect(api.call("POST", "/v1/sessions", token: api.adminToken, body: body).status == 201)
        #expect(api.call("GET", "/v1/packaging-jobs", token: api.controlToken).status == 403)
        #expect(api.call("PUT", "/v1/assets/x", token: api.controlToken, body: "{}").status == 403)
    }
}

@Suite struct SessionRouteTests {
    @Test func createsASessionWithASignedPlaybackURL() throws {
        let api = try APIFixture()
        let response = api.call(
            "POST", "/v1/sessions", token: api.controlToken, body: #"{"asset":"clip","ttlSeconds":600}"#)
        #expect(response.status == 201)
        let json = try #require(response.json)
        let id = try #require(json["id"]?.string)
        let token = try #require(json["token"]?.string)
        #expect(response.headers["Location"] == "/v1/sessions/\(id)")
        #expect(json["playbackUrl"]?.string == "http://gw.test/v1/hls/clip/master.m3u8?token=\(token)")
        #expect(api.gateway.deliverKey(kid: clipKID, token: token, remote: "") == .success(clipKey))
    }

    @Test func aSessionEndsWhenItsTTLSecondsRunOut() throws {
        let api = try APIFixture()
        let created = api.call(
            "POST", "/v1/sessions", token: api.controlToken, body: #"{"asset":"clip","ttlSeconds":90}"#)
        let json = try #require(created.json)
        let (id, token) = (try #require(json["id"]?.string), try #require(json["token"]?.string))
        #expect(json["createdAt"] == .string("2027-01-15T08:00:00.000Z"))
        #expect(json["expiresAt"] == .string("2027-01-15T08:01:30.000Z"))
        let key = "/v1/keys/\(clipKID)?token=\(token)"
        let playlist = "/v1/hls/clip/media.m3u8?token=\(token)"
        let session = "/v1/sessions/\(id)?token=\(token)"
        #expect(api.call("GET", key).status == 200)
        api.fixture.clock.advance(89)
        #expect(api.call("GET", key).status == 200)
        #expect(api.call("GET", playlist).status == 200 && api.call("GET", session).status == 200)
        api.fixture.clock.advance(1)
        for target in [key, playlist] {
            let expired = api.call("GET", target)
            #expect(expired.status == 401 && expired.problemCode == "token-expired", "\(target)")
        }
        // The session route takes an API token when the session's own no longer counts.
        #expect(api.call("GET", session).problemCode == "api-token-missing")
    }

    @Test(arguments: [
        (#"{"asset":"#, 400, "invalid-json"), ("[1]", 400, "invalid-json"),
        (#"{"asset":"clip","x":1}"#, 422, "invalid-field"),
        ("{}", 422, "invalid-field"), (#"{"asset":"../etc"}"#, 422, "invalid-field"),
        (#"{"asset":"nope"}"#, 404, "asset-not-found"), (#"{"asset":"clip","ttlSeconds":5}"#, 422, "invalid-ttl"),
        (#"{"asset":"clip","asset":"clip"}"#, 400, "invalid-json"),
        (String(repeating: "[", count: 100) + String(repeating: "]", count: 100), 400, "invalid-json"),
    ])
    func refusesBadBodies(_ body: String, _ status: Int, _ code: String) throws {
        let api = try APIFixture()
        let response = api.call("POST", "/v1/sessions", token: api.controlToken, body: body)
        #expect(response.status == status)
        #expect(response.problemCode == code)
    }

    @Test func refusesBodiesThatAreNotJSON() throws {
        let api = try APIFixture()
        let response = api.call(
            "POST", "/v1/sessions", token: api.controlToken, body: "asset=clip",
            headers: [("Content-Type", "text/plain")])
        #expect(response.status == 415)
    }

    @Test func revokesOnceThen409And404() throws {
        let api = try APIFixture()
        let (id, _) = try api.session()
        #expect(api.call("DELETE", "/v1/sessions/\(id)", token: api.controlToken).status == 204)
        #expect(api.call("DELETE", "/v1/sessions/\(id)", token: api.controlToken).status == 409)
        #expect(api.call("DELETE", "/v1/sessions/ses_missing", token: api.controlToken).status == 404)
        #expect(api.call("GET", "/v1/sessions/\(id)", token: api.controlToken).json?["revoked"] == true)
    }

    @Test func takesCaptureReportsWithTheSessionTokenOrAControlToken() throws {
        let api = try APIFixture()
        let (id, token) = try api.session()
        let report = #"{"capturing":true,"seq":2,"observedAt":"2027-01-15T08:00:00Z"}"#
        let viaQuery = api.call("PUT", "/v1/sessions/\(id)/capture-state?token=\(token)", body: report)
        #expect(viaQuery.status == 200)
        #expect(viaQuery.json?["applied"] == true && viaQuery.json?["capture"]?["state"] == "capturing")
        let stale = api.call(
            "PUT", "/v1/sessions/\(id)/capture-state", token: token,
            body: #"{"capturing":false,"seq":1,"observedAt":"2027-01-15T08:00:00Z"}"#)
        #expect(stale.json?["applied"] == false && stale.json?["capture"]?["state"] == "capturing")
        let viaControl = api.call(
            "PUT", "/v1/sessions/\(id)/capture-state", token: api.controlToken,
            body: #"{"capturing":false,"seq":3,"observedAt":"2027-01-15T09:00:01.5+01:00"}"#)
        #expect(viaControl.json?["capture"]?["state"] == "clear")
        // Another session's token is not enough.
        let (_, otherToken) = try api.session()
        #expect(api.call("PUT", "/v1/sessions/\(id)/capture-state?token=\(otherToken)", body: report).status == 401)
        for bad in [
            #"{"capturing":"yes","seq":1,"observedAt":"2027-01-15T08:00:00Z"}"#,
            #"{"capturing":true,"seq":-1,"observedAt":"2027-01-15T08:00:00Z"}"#,
            #"{"capturing":true,"seq":1.5,"observedAt":"2027-01-15T08:00:00Z"}"#,
            #"{"capturing":true,"seq":1,"observedAt":"2027-02-30T08:00:00Z"}"#,
            #"{"capturing":true,"seq":1,"observedAt":"yesterday"}"#,
        ] {
            #expect(api.call("PUT", "/v1/sessions/\(id)/capture-state", token: token, body: bad).status == 422)
        }
    }

    @Test func streamsCaptureChangesCommandsAndRevocationAsServerSentEvents() throws {
        let api = try APIFixture()
        let (id, token) = try api.session()
        let response = api.call("GET", "/v1/sessions/\(id)/events?token=\(token)")
        #expect(response.status == 200 && response.headers["Content-Type"] == "text/event-stream")
        guard case .stream(let stream) = response.body else {
            Issue.record("not a stream")
            return
        }
        let opening = String(decoding: stream.takePending(), as: UTF8.self)
        #expect(opening.hasPrefix("retry: 3000\n\nevent: capture-state\ndata: {\"state\":\"unknown\""))
        _ = try api.gateway.reportCapture(session: id, capturing: true, seq: 1, observedAt: api.fixture.clock.now())
        #expect(String(decoding: stream.takePending(), as: UTF8.self).contains("\"state\":\"capturing\""))
        #expect(
            api.call("POST", "/v1/sessions/\(id)/commands", token: api.controlToken, body: #"{"command":"pause"}"#)
                .status == 202)
        #expect(
            String(decoding: stream.takePending(), as: UTF8.self).hasPrefix(
                "event: command\ndata: {\"command\":\"pause\""))
        try api.gateway.revokeSession(id)
        #expect(String(decoding: stream.takePending(), as: UTF8.self).hasPrefix("event: revoked\n"))
        #expect(!stream.isOpen)
        #expect(api.gateway.events.subscriberCount == 0)
        #expect(api.call("GET", "/v1/sessions/ses_none/events", token: api.controlToken).status == 404)
    }
}

@Suite struct MediaRouteTests {
    @Test func deliversKeysOnlyWithAValidTokenAndNeverCachesThem() throws {
        let api = try APIFixture()
        let (_, token) = try api.session()
        let granted = api.call("GET", "/v1/keys/\(clipKID)?token=\(token)")
        #expect(granted.status == 200 && granted.bytes == clipKey)
        #expect(granted.headers["Cache-Control"] == "no-store")
        let cases: [(String, Int, String)] = [
            ("", 401, "token-missing"), ("?token=garbage", 401, "token-malformed"),
            ("?token=\(token.dropLast(2))AA", 401, "token-tampered"),
        ]
        for (query, status, code) in cases {
            let refused = api.call("GET", "/v1/keys/\(clipKID)\(query)")
            #expect(refused.status == status && refused.problemCode == code)
            #expect(refused.headers["Cache-Control"] == "no-store")
            #expect(refused.json?["status"]?.integer == Int64(status))
            #expect(!refused.bytes.isEmpty && refused.bytes.count != 16)
        }
    }

    @Test func servesRewrittenPlaylistsAndCacheableSegmentsWithRanges() throws {
        let api = try APIFixture()
        let (_, token) = try api.session()
        let media = api.call("GET", "/v1/hls/clip/media.m3u8?token=\(token)")
        #expect(media.status == 200 && media.headers["Content-Type"] == "application/vnd.apple.mpegurl")
        #expect(media.headers["Cache-Control"] == "private, no-store")
        #expect(String(decoding: media.bytes, as: UTF8.self).contains("/v1/keys/\(clipKID)?token=\(token)"))
        #expect(api.call("GET", "/v1/hls/clip/media.m3u8").problemCode == "token-missing")

        let whole = api.call("GET", "/v1/hls/clip/seg0.ts")
        #expect(whole.status == 200 && whole.headers["Cache-Control"] == "public, max-age=31536000, immutable")
        guard case .file(let region) = whole.body else {
            Issue.record("segment not served from a file")
            return
        }
        #expect(region.offset == 0 && region.length == 1880 && region.path.hasSuffix("/imports/clip/seg0.ts"))
        let ranged = api.call("GET", "/v1/hls/clip/seg0.ts", headers: [("Range", "bytes=100-199")])
        #expect(ranged.status == 206 && ranged.headers["Content-Range"] == "bytes 100-199/1880")
        let tail = api.call("GET", "/v1/hls/clip/seg0.ts", headers: [("Range", "bytes=-80")])
        #expect(tail.headers["Content-Range"] == "bytes 1800-1879/1880")
        let beyond = api.call("GET", "/v1/hls/clip/seg0.ts", headers: [("Range", "bytes=5000-")])
        #expect(beyond.status == 416 && beyond.headers["Content-Range"] == "bytes */1880")
        #expect(api.call("GET", "/v1/hls/clip/seg0.ts", headers: [("Range", "bytes=1-2,5-6")]).status == 200)
        #expect(api.call("GET", "/v1/hls/clip/seg0.ts", headers: [("Range", "items=1-2")]).status == 200)
    }

    @Test func echoesAllowedOriginsForHlsJsAndNeverAStarWithCredentials() throws {
        let api = try APIFixture()
        let (_, token) = try api.session()
        let allowed = api.call(
            "GET", "/v1/keys/\(clipKID)?token=\(token)", headers: [("Origin", "https://player.example")])
        #expect(allowed.headers["Access-Control-Allow-Origin"] == "https://player.example")
        #expect(allowed.headers["Access-Control-Allow-Credentials"] == nil)
        // One allowed origin is named to every caller; a browser on another origin refuses the answer.
        let other = api.call("GET", "/v1/hls/clip/seg0.ts", headers: [("Origin", "https://evil.example")])
        #expect(other.headers["Access-Control-Allow-Origin"] == "https://player.example")
        let preflight = api.call(
            "OPTIONS", "/v1/hls/clip/seg0.ts",
            headers: [("Origin", "https://player.example"), ("Access-Control-Request-Method", "GET")])
        #expect(preflight.status == 204 && preflight.headers["Access-Control-Allow-Headers"]?.contains("Range") == true)
        #expect(
            api.call("OPTIONS", "/v1/hls/clip/seg0.ts", headers: [("Origin", "https://evil.example")]).status == 403)

        let open = try APIFixture(corsOrigins: ["*"])
        let star = open.call("GET", "/v1/hls/clip/seg0.ts", headers: [("Origin", "https://any.example")])
        #expect(star.headers["Access-Control-Allow-Origin"] == "*")
        #expect(star.headers["Access-Control-Allow-Credentials"] == nil)
    }

    /// `Vary: Origin` only where the answer depends on `Origin`: otherwise every new `Origin` value
    /// is a cache miss in nginx that reaches the gateway.
    @Test func variesByOriginOnlyWhenTheAnswerDependsOnIt() throws {
        let origins = ["https://r1.invalid", "https://player.example", "https://other.example"]
        func answers(_ api: APIFixture) -> [HTTPResponse] {
            [api.call("GET", "/v1/hls/clip/seg0.ts")]
                + origins.map { api.call("GET", "/v1/hls/clip/seg0.ts", headers: [("Origin", $0)]) }
        }
        for corsOrigins in [[], ["*"], ["https://player.example"]] {
            let api = try APIFixture(corsOrigins: corsOrigins)
            let expected = corsOrigins.first
            for answer in answers(api) {
                #expect(answer.status == 200)
                #expect(answer.headers["Vary"] == nil, "\(corsOrigins)")
                #expect(answer.headers["Access-Control-Allow-Origin"] == expected, "\(corsOrigins)")
            }
        }
        // With several, the allowed one is echoed, and every answer varies, those without the field too.
        let several = try APIFixture(corsOrigins: ["https://player.example", "https://other.example"])
        let allowed = answers(several).map { $0.headers["Access-Control-Allow-Origin"] }
        #expect(allowed == [nil, nil, "https://player.example", "https://other.example"])
        #expect(answers(several).allSatisfy { $0.headers["Vary"] == "Origin" })
    }
}

@Suite struct JobAndAssetRouteTests {
    @Test func createsJobsIdempotentlyAndPagesThem() throws {
        let engine = FakeEngine()
        engine.hold(true)
        let api = try APIFixture(engine: engine)
        try api.fixture.scratch.write("inputs/clip.mp4", "x")
        let body = #"{"input":"clip.mp4","asset":"movie"}"#
        let first = api.call(
            "POST", "/v1/packaging-jobs", token: api.packageToken, body: body, headers: [("Idempotency-Key", "abc")])
        #expect(first.status == 202)
        let id = try #require(first.json?["id"]?.string)
        #expect(first.headers["Location"] == "/v1/packaging-jobs/\(id)")
        let replay = api.call(
            "POST", "/v1/packaging-jobs", token: api.packageToken, body: body, headers: [("Idempotency-Key", "abc")])
        #expect(replay.status == 202 && replay.json?["id"]?.string == id)
        let conflict = api.call(
            "POST", "/v1/packaging-jobs", token: api.packageToken, body: #"{"input":"clip.mp4","asset":"other"}"#,
            headers: [("Idempotency-Key", "abc")])
        #expect(conflict.status == 422 && conflict.problemCode == "idempotency-key-reused")
        #expect(
            api.call(
                "POST", "/v1/packaging-jobs", token: api.packageToken, body: body, headers: [("Idempotency-Key", "a b")]
            )
            .problemCode == "invalid-idempotency-key")
        #expect(
            api.call("POST", "/v1/packaging-jobs", token: api.packageToken, body: #"{"input":"../x","asset":"m"}"#)
                .problemCode == "invalid-input-path")
        for _ in 0..<2 { _ = api.call("POST", "/v1/packaging-jobs", token: api.packageToken, body: body) }
        let page = api.call("GET", "/v1/packaging-jobs?limit=2", token: api.packageToken)
        #expect(page.json?["items"]?.array?.count == 2)
        let cursor = try #require(page.json?["nextCursor"]?.string)
        let rest = api.call("GET", "/v1/packaging-jobs?limit=2&cursor=\(cursor)", token: api.packageToken)
        #expect(rest.json?["items"]?.array?.last?["id"]?.string == id && rest.json?["nextCursor"] == nil)
        #expect(api.call("GET", "/v1/packaging-jobs?limit=0", token: api.packageToken).status == 400)
        #expect(api.call("GET", "/v1/packaging-jobs?cursor=x", token: api.packageToken).status == 400)
        let cancelled = api.call("DELETE", "/v1/packaging-jobs/\(id)", token: api.packageToken)
        #expect(cancelled.status == 200 && cancelled.json?["state"] == "cancelled")
        #expect(api.call("DELETE", "/v1/packaging-jobs/\(id)", token: api.packageToken).status == 409)
        #expect(api.call("GET", "/v1/packaging-jobs/job_nope", token: api.packageToken).status == 404)
    }

    @Test func importsAssetsAndSetsTheirPolicy() throws {
        let api = try APIFixture()
        let directory = try writePackagedAsset(in: api.fixture.scratch, directory: "imports/song", keyURI: "k.bin")
        let body = """
            {"directory":"\(directory)","denyKeysWhileCapturing":true,
             "keys":[{"kid":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","key":"000102030405060708090a0b0c0d0e0f","uri":"k.bin"}]}
            """
        let created = api.call("PUT", "/v1/assets/song", token: api.adminToken, body: body)
        #expect(created.status == 201)
        #expect(created.json?["kids"] == .array(["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]))
        #expect(api.call("PUT", "/v1/assets/song", token: api.adminToken, body: body).status == 200)
        let badKey = body.replacingOccurrences(of: "000102", with: "zz0102")
        #expect(api.call("PUT", "/v1/assets/song", token: api.adminToken, body: badKey).status == 422)
        let policy = api.call(
            "PUT", "/v1/assets/song/policy", token: api.controlToken, body: #"{"denyKeysWhileCapturing":false}"#)
        #expect(policy.json?["denyKeysWhileCapturing"] == false)
        let list = api.call("GET", "/v1/assets?limit=1", token: api.controlToken)
        #expect(list.json?["items"]?.array?.first?["id"] == "clip" && list.json?["nextCursor"] == "clip")
        #expect(api.call("GET", "/v1/assets/none", token: api.controlToken).status == 404)
    }

    @Test func saysWhenThereIsNoPackager() throws {
        let api = try APIFixture()
        let response = api.call(
            "POST", "/v1/packaging-jobs", token: api.packageToken, body: #"{"input":"a","asset":"b"}"#)
        #expect(response.status == 503 && response.problemCode == "packaging-unavailable")
    }
}

@Suite struct OpsRouteTests {
    @Test func reportsLivenessReadinessAndMetricsWithoutIDs() throws {
        let api = try APIFixture()
        let (id, token) = try api.session()
        _ = api.call("GET", "/v1/keys/\(clipKID)?token=\(token)")
        _ = api.call("GET", "/v1/sessions/\(id)", token: api.controlToken)
        #expect(api.call("GET", "/livez").status == 200)
        #expect(api.call("GET", "/readyz").status == 200)
        let metrics = String(decoding: api.call("GET", "/metrics").bytes, as: UTF8.self)
        #expect(metrics.contains("guardplay_key_requests_total{outcome=\"granted\"} 1"))
        #expect(
            metrics.contains("guardplay_http_requests_total{route=\"/v1/keys/{kid}\",method=\"GET\",status=\"200\"} 1"))
        #expect(
            metrics.contains("guardplay_http_request_duration_seconds_bucket{route=\"/v1/keys/{kid}\",le=\"+Inf\"} 1"))
        #expect(!metrics.contains(id) && !metrics.contains(token) && !metrics.contains(clipKID))
        for line in metrics.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(line.hasPrefix("guardplay_"))
        }
        api.state.beginDraining()
        #expect(api.call("GET", "/readyz").status == 503)
    }
}
