import ControlAPI
import Foundation
import Gateway
import HTTPServer
import HTTPTestSupport
import Testing

/// The gateway with the `clip` asset (and a second asset, `other`, with a key of its own) served on a
/// loopback socket.
final class LiveLicenseGateway {
    let fixture: GatewayFixture
    let server: HTTPServer
    static let otherKID = "ffeeddccbbaa99887766554433221100"

    init() throws {
        fixture = try GatewayFixture()
        let directory = try writePackagedAsset(in: fixture.scratch, directory: "imports/other", keyURI: "key.bin")
        _ = try fixture.gateway.importAsset(
            id: "other", directory: directory,
            keys: [ImportedKey(kid: Self.otherKID, key: Array(repeating: 0xAB, count: 16), uri: nil)],
            denyKeysWhileCapturing: false)
        server = try fixture.startLive()
    }

    deinit {
        server.stop(grace: 1)
        fixture.gateway.stop()
    }

    var gateway: Gateway { fixture.gateway }

    /// `POST /v1/licenses/clearkey` with `body` and, when given, `?token=`.
    func license(_ body: String, token: String?) throws -> RawResponse {
        let target = "/v1/licenses/clearkey" + (token.map { "?token=\($0)" } ?? "")
        return try exchange(
            port: server.port, "POST", target, headers: [("Content-Type", "application/json")], body: body)
    }

    /// A license request for the key IDs given in hex.
    static func request(_ kids: [String], type: String = "temporary") -> String {
        let encoded = kids.map { "\"\(ClearKeyID.base64URL(hexKID: $0)!)\"" }.joined(separator: ",")
        return #"{"kids":[\#(encoded)],"type":"\#(type)"}"#
    }
}

extension RawResponse {
    /// The problem code from a problem+json body's `type`.
    var problemCode: String? {
        guard header("Content-Type") == "application/problem+json", let type = json?["type"] as? String else {
            return nil
        }
        return type.hasPrefix("/problems/") ? String(type.dropFirst(10)) : nil
    }
}

@Suite(.timeLimit(.minutes(30))) struct ClearKeyLicenseTests {
    @Test func base64URLKeyIDsAreStrict() {
        #expect(ClearKeyID.base64URL(hexKID: clipKID) == "ABEiM0RVZneImaq7zN3u_w")
        #expect(ClearKeyID.hexKID(base64URL: "ABEiM0RVZneImaq7zN3u_w") == clipKID)
        // Padding, the other alphabet, a stray low bit, and 15 or 17 bytes are all refused.
        for text in [
            "ABEiM0RVZneImaq7zN3u_w==", "ABEiM0RVZneImaq7zN3u/w", "ABEiM0RVZneImaq7zN3u_x", "ABEiM0RVZneImaq7zN3u",
            "ABEiM0RVZneImaq7zN3u_wA",
        ] {
            #expect(ClearKeyID.hexKID(base64URL: text) == nil, "\(text)")
        }
    }

    @Test func grantsTheSessionAssetsKeysAsAJSONWebKeySetNeverCached() throws {
        let live = try LiveLicenseGateway()
        let (session, token) = try live.gateway.createSession(asset: "clip", ttl: nil)
        let response = try live.license(LiveLicenseGateway.request([clipKID, clipKID]), token: token)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Cache-Control") == "no-store")
        let keys = try #require(response.json?["keys"] as? [[String: String]])
        // The same key ID twice is answered once.
        #expect(keys == [["kty": "oct", "kid": "ABEiM0RVZneImaq7zN3u_w", "k": ClearKeyID.base64URL(clipKey)]])
        #expect(response.json?["type"] as? String == "temporary")

        live.gateway.flushAudit()
        let record = try #require(try live.fixture.store.recentAudit(limit: 1).first)
        #expect(record.action == "license" && record.outcome == "granted" && record.kid == clipKID)
        #expect(record.sessionID == session.id && record.assetID == "clip")
        let metrics = try exchange(port: live.server.port, "GET", "/metrics").text
        #expect(metrics.contains("guardplay_license_requests_total{outcome=\"granted\"} 1"), "\(metrics)")
    }

    @Test func refusesKeysOfAnotherAssetEvenBesideItsOwn() throws {
        let live = try LiveLicenseGateway()
        let (_, token) = try live.gateway.createSession(asset: "clip", ttl: nil)
        for kids in [[LiveLicenseGateway.otherKID], [clipKID, LiveLicenseGateway.otherKID]] {
            let response = try live.license(LiveLicenseGateway.request(kids), token: token)
            #expect(response.status == 403 && response.problemCode == "token-wrong-asset", "\(response.text)")
            #expect(!response.text.contains(ClearKeyID.base64URL(clipKey)), "no key of the request is given")
            #expect(response.header("Cache-Control") == "no-store")
        }
        let unknown = try live.license(LiveLicenseGateway.request(["0123456789abcdef0123456789abcdef"]), token: token)
        #expect(unknown.status == 404 && unknown.problemCode == "key-unknown")
        live.gateway.flushAudit()
        let record = try #require(try live.fixture.store.recentAudit(limit: 1).first)
        #expect(record.action == "license" && record.outcome == "refused" && record.reason == "key-unknown")
    }

    @Test func appliesTheTokenChecksAndTheCapturePolicyOfTheKeyEndpoint() throws {
        let live = try LiveLicenseGateway()
        let body = LiveLicenseGateway.request([clipKID])
        let missing = try live.license(body, token: nil)
        #expect(missing.status == 401 && missing.problemCode == "token-missing")
        #expect(missing.header("WWW-Authenticate")?.hasPrefix("Bearer realm=\"guard-play-session\"") == true)
        let tampered = try live.license(body, token: "v1.s.clip.9999999999." + String(repeating: "A", count: 43))
        #expect(tampered.status == 401 && tampered.problemCode == "token-tampered")

        _ = try live.gateway.setPolicy(asset: "clip", denyKeysWhileCapturing: true)
        let (session, token) = try live.gateway.createSession(asset: "clip", ttl: nil)
        let now = live.fixture.clock.now()
        _ = try live.gateway.reportCapture(session: session.id, capturing: true, seq: 1, observedAt: now)
        let capturing = try live.license(body, token: token)
        #expect(capturing.status == 403 && capturing.problemCode == "capture-active", "\(capturing.text)")
        _ = try live.gateway.reportCapture(session: session.id, capturing: false, seq: 2, observedAt: now)
        #expect(try live.license(body, token: token).status == 200)
        try live.gateway.revokeSession(session.id)
        let revoked = try live.license(body, token: token)
        #expect(revoked.status == 403 && revoked.problemCode == "session-revoked")
        let metrics = try exchange(port: live.server.port, "GET", "/metrics").text
        #expect(metrics.contains("guardplay_license_requests_total{outcome=\"capture-active\"} 1"))
    }

    @Test(arguments: [
        "not json", #"["ABEiM0RVZneImaq7zN3u_w"]"#, #"{"type":"temporary"}"#, #"{"kids":[]}"#,
        #"{"kids":"ABEiM0RVZneImaq7zN3u_w"}"#, #"{"kids":[7]}"#, #"{"kids":["ABEiM0RVZneImaq7zN3u_w=="]}"#,
        #"{"kids":["AAECAwQFBgcICQoLDA0O"]}"#, #"{"kids":["ABEiM0RVZneImaq7zN3u_w"],"type":"persistent-license"}"#,
        #"{"kids":["ABEiM0RVZneImaq7zN3u_w"],"extra":1}"#,
        #"{"kids":[\#(Array(repeating: "\"ABEiM0RVZneImaq7zN3u_w\"", count: 17).joined(separator: ","))]}"#,
    ])
    func refusesAMalformedRequestWith400(_ body: String) throws {
        let live = try LiveLicenseGateway()
        let (_, token) = try live.gateway.createSession(asset: "clip", ttl: nil)
        let response = try live.license(body, token: token)
        #expect(response.status == 400, "\(body): \(response.text)")
        #expect(["invalid-license-request", "invalid-json"].contains(response.problemCode ?? ""), "\(response.text)")
    }

    @Test func refusesALargeBodyUnread() throws {
        let live = try LiveLicenseGateway()
        let (_, token) = try live.gateway.createSession(asset: "clip", ttl: nil)
        let body =
            #"{"kids":["ABEiM0RVZneImaq7zN3u_w"],"type":"temporary","#
            + String(repeating: " ", count: 5000) + "}"
        let response = try live.license(body, token: token)
        #expect(response.status == 413 && response.problemCode == "license-request-too-large", "\(response.text)")
    }
}
