import Foundation
import Gateway
import HTTPTestSupport
import Testing

@testable import ControlAPI

/// The web player's page and files as the gateway serves them: the embedded copy is exactly what is in
/// `web/player/`, the page opens only with its own session's token and sends a strict policy, and a
/// session's create response names it. (The page playing is proven in a browser by BrowserPlayerTests.)
@Suite(.timeLimit(.minutes(30))) struct WebPlayerTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("web/player")

    @Test func theEmbeddedFilesAreTheFilesInWebPlayer() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).sorted()
        #expect(names.contains("main.js") && names.contains("player.html"))
        #expect(WebPlayerAssets.files.keys.sorted() == names, "run scripts/embed-web-player.sh")
        for name in names {
            let text = try String(contentsOf: Self.directory.appendingPathComponent(name), encoding: .utf8)
            #expect(WebPlayerAssets.file(name) == text, "\(name) differs from its embedded copy: run make web-player")
        }
    }

    @Test func thePageOpensWithItsSessionsTokenUnderAStrictPolicy() throws {
        let live = try LiveLicenseGateway()
        let (session, token) = try live.gateway.createSession(asset: "clip", ttl: nil)
        let page = try exchange(port: live.server.port, "GET", "/v1/sessions/\(session.id)/player?token=\(token)")
        #expect(page.status == 200 && page.header("Content-Type") == "text/html; charset=utf-8")
        let policy = try #require(page.header("Content-Security-Policy"))
        #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'"))
        #expect(policy.contains("media-src 'self' blob:") && policy.contains("frame-ancestors 'none'"))
        #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"))
        #expect(page.header("Cache-Control") == "no-store" && page.header("Referrer-Policy") == "no-referrer")
        #expect(page.header("X-Content-Type-Options") == "nosniff")
        #expect(page.text.contains("data-master=\"/v1/hls/clip/master.m3u8\""))
        #expect(page.text.contains("data-events=\"/v1/sessions/\(session.id)/events\""))
        // The token stays in the page's address, never in its text; no inline script.
        #expect(!page.text.contains(token) && !page.text.contains("<script>"))
        #expect(page.text.contains("<script type=\"module\" src=\"/v1/web-player/main.js\"></script>"))

        let script = try exchange(port: live.server.port, "GET", "/v1/web-player/main.js")
        #expect(script.status == 200 && script.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(script.text == WebPlayerAssets.file("main.js"))
        for missing in ["nothing.js", "player.html"] {
            let response = try exchange(port: live.server.port, "GET", "/v1/web-player/\(missing)")
            #expect(response.status == 404 && response.problemCode == "not-found")
        }
    }

    @Test func thePageRefusesOtherTokens() throws {
        let live = try LiveLicenseGateway()
        let (session, token) = try live.gateway.createSession(asset: "clip", ttl: nil)
        let (_, otherToken) = try live.gateway.createSession(asset: "clip", ttl: nil)
        let port = live.server.port
        let missing = try exchange(port: port, "GET", "/v1/sessions/\(session.id)/player")
        #expect(missing.status == 401 && missing.problemCode == "token-missing")
        let other = try exchange(port: port, "GET", "/v1/sessions/\(session.id)/player?token=\(otherToken)")
        #expect(other.status == 403 && other.problemCode == "session-unknown")
        try live.gateway.revokeSession(session.id)
        let revoked = try exchange(port: port, "GET", "/v1/sessions/\(session.id)/player?token=\(token)")
        #expect(revoked.status == 403 && revoked.problemCode == "session-revoked")
    }

    @Test func theCreatedSessionNamesItsPlayer() throws {
        let api = try APIFixture()
        let created = api.call("POST", "/v1/sessions", token: api.controlToken, body: #"{"asset":"clip"}"#)
        let id = try #require(created.json?["id"]?.string)
        let token = try #require(created.json?["token"]?.string)
        #expect(created.json?["playerPath"]?.string == "/v1/sessions/\(id)/player?token=\(token)")
        #expect(created.json?["playerUrl"]?.string == "http://gw.test/v1/sessions/\(id)/player?token=\(token)")
    }
}
