import ControlAPI
import Foundation
import Gateway
import HTTPServer
import Testing

/// 401s challenge, 405s and preflights are counted under their own method.
@Suite struct ChallengeAndMetricsTests {
    @Test func every401CarriesAWWWAuthenticateChallenge() throws {
        let api = try APIFixture()
        let missing = api.call("POST", "/v1/sessions", body: #"{"asset":"clip"}"#)
        #expect(missing.status == 401 && missing.headers["WWW-Authenticate"] == #"Bearer realm="guard-play""#)
        let invalid = api.call("GET", "/v1/assets", token: "gp_nope")
        #expect(
            invalid.status == 401
                && invalid.headers["WWW-Authenticate"] == #"Bearer realm="guard-play", error="invalid_token""#)
        let (id, _) = try api.session()
        let sessionRoute = api.call("GET", "/v1/sessions/\(id)")
        #expect(sessionRoute.status == 401 && sessionRoute.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
        let key = api.call("GET", "/v1/keys/\(clipKID)")
        #expect(key.status == 401 && key.headers["WWW-Authenticate"] == #"Bearer realm="guard-play-session""#)
        let forged = api.call("GET", "/v1/hls/clip/master.m3u8?token=v1.x")
        #expect(
            forged.status == 401
                && forged.headers["WWW-Authenticate"] == #"Bearer realm="guard-play-session", error="invalid_token""#)
        // A 403 is not a challenge.
        let forbidden = api.call("GET", "/v1/packaging-jobs", token: api.controlToken)
        #expect(forbidden.status == 403 && forbidden.headers["WWW-Authenticate"] == nil)
    }

    @Test func counts405sAndPreflightsUnderTheirOwnMethod() throws {
        let api = try APIFixture()
        #expect(api.call("PATCH", "/v1/sessions", token: api.adminToken).status == 405)
        #expect(api.call("DELETE", "/v1/keys/\(clipKID)").status == 405)
        let preflight = api.call(
            "OPTIONS", "/v1/keys/\(clipKID)",
            headers: [("Origin", "https://player.example"), ("Access-Control-Request-Method", "GET")])
        #expect(preflight.status == 204)
        #expect(api.call("BREW", "/v1/keys/\(clipKID)").status == 405)
        let metrics = String(decoding: api.call("GET", "/metrics").bytes, as: UTF8.self)
        #expect(metrics.contains(#"route="/v1/sessions",method="PATCH",status="405"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"route="/v1/keys/{kid}",method="DELETE",status="405"} 1"#))
        #expect(metrics.contains(#"route="/v1/keys/{kid}",method="OPTIONS",status="204"} 1"#))
        #expect(metrics.contains(#"route="/v1/keys/{kid}",method="other",status="405"} 1"#))
        #expect(!metrics.contains(#"route="/v1/keys/{kid}",method="GET""#))
        #expect(!metrics.contains(#"route="/v1/sessions",method="POST""#))
    }
}
