import Foundation
import HTTPTestSupport
import Testing

/// Acceptance 2 (key auth) and AES-128 playback through the gateway, over real loopback sockets
/// against the built `guard-play serve`.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayKeyTests {
    @Test func refusesKeysWithoutAValidTokenAndSaysWhy() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        let clip = try makeAESHLS(in: server.importRoot, name: "clip")
        let song = try makeAESHLS(from: fixture("song.m4a"), in: server.importRoot, name: "song")
        try server.importAsset(clip, id: "clip", token: admin)
        try server.importAsset(song, id: "song", token: admin)
        let (clipSession, clipToken) = try server.session("clip", token: admin)
        let (_, songToken) = try server.session("song", token: admin)

        let granted = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(clipToken)")
        #expect(granted.status == 200 && granted.body == clip.key)
        #expect(granted.header("Cache-Control") == "no-store")

        let expired = signedToken(
            session: clipSession, asset: "clip", expiresAt: Int64(Date().timeIntervalSince1970) - 5)
        let fresh = signedToken(
            session: clipSession, asset: "clip", expiresAt: Int64(Date().timeIntervalSince1970) + 600)
        #expect(try server.call("GET", "/v1/keys/\(clip.kid)?token=\(fresh)").status == 200)
        var tampered = Array(clipToken)
        tampered[tampered.count - 5] = tampered[tampered.count - 5] == "x" ? "y" : "x"
        let cases: [(String, Int, String)] = [
            ("", 401, "token-missing"),
            ("?token=\(expired)", 401, "token-expired"),
            ("?token=\(String(tampered))", 401, "token-tampered"),
            ("?token=\(clipToken.replacingOccurrences(of: ".clip.", with: ".song."))", 401, "token-tampered"),
            ("?token=\(songToken)", 403, "token-wrong-asset"),
            ("?token=not.a.token", 401, "token-malformed"),
        ]
        for (query, status, code) in cases {
            let refused = try server.call("GET", "/v1/keys/\(clip.kid)\(query)")
            #expect(refused.status == status, "\(code)")
            #expect(refused.header("Content-Type") == "application/problem+json")
            #expect(refused.json?["type"] as? String == "/problems/\(code)")
            #expect(refused.json?["status"] as? Int == status)
            #expect(refused.body != clip.key && !refused.text.contains(clip.key.hexString))
        }

        #expect(try server.call("DELETE", "/v1/sessions/\(clipSession)", token: admin).status == 204)
        let revoked = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(clipToken)")
        #expect(revoked.status == 403 && revoked.json?["type"] as? String == "/problems/session-revoked")

        // Every grant and every refusal of a valid token is in the audit log once the server has
        // stopped; refusals with no valid token are counted by reason.
        #expect(server.stop() == 0)
        let audit = try server.query(
            "SELECT outcome || ':' || coalesce(reason, '') FROM audit WHERE action = 'key' ORDER BY seq")
        #expect(
            audit.split(separator: "\n") == [
                "granted:", "granted:", "refused:token-wrong-asset", "refused:session-revoked",
            ])
        let counted = try server.query(
            "SELECT reason || ':' || sum(count) FROM audit_refusals GROUP BY reason ORDER BY reason")
        #expect(
            counted.split(separator: "\n") == [
                "token-expired:1", "token-malformed:1", "token-missing:1", "token-tampered:2",
            ])
    }

    @Test func ffmpegPlaysAnEncryptedStreamThroughTheGatewayWithTheSessionToken() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        let clip = try makeAESHLS(in: server.importRoot, name: "clip")
        try server.importAsset(clip, id: "clip", token: admin)
        let (_, token) = try server.session("clip", token: admin)
        let url = "http://127.0.0.1:\(server.port)/v1/hls/clip/master.m3u8?token=\(token)"
        let through = try run(
            "/usr/bin/ffmpeg", ["-nostdin", "-loglevel", "error", "-i", url, "-map", "0:v:0", "-f", "framemd5", "-"])
        #expect(through.status == 0, "\(through.stderr)")
        let direct = try run(
            "/usr/bin/ffmpeg",
            ["-nostdin", "-loglevel", "error", "-i", fixture("clip.mp4"), "-map", "0:v:0", "-f", "framemd5", "-"])
        let frames = { (text: String) in
            text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: ",").last! }
        }
        #expect(frames(through.stdout).count == 300)
        #expect(frames(through.stdout) == frames(direct.stdout))

        // Without the token, FFmpeg gets no playlist and so no key.
        let refused = try run(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-loglevel", "error", "-i", "http://127.0.0.1:\(server.port)/v1/hls/clip/master.m3u8", "-f",
                "null", "-",
            ])
        #expect(refused.status != 0)
    }
}
