import Crypto
import Foundation
import HTTPTestSupport
import Testing

/// Packaging jobs with `container`, `encryption` and `keyPeriod` over loopback: every key period's key
/// stored (wrapped) and served to the asset's sessions only, the playlists rewritten per session for
/// every key line, fMP4 init segments and segments served with ranges, all of it again after a restart;
/// and the capture policy refusing a later period's key to a session that started capturing.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayRotationTests {
    func report(_ server: GatewayServer, session: String, token: String, capturing: Bool, seq: Int) throws
        -> RawResponse
    { try server.reportCapture(session: session, token: token, capturing: capturing, seq: seq) }

    /// The key IDs a rewritten media playlist names, in order, each URI checked to carry the token.
    func keyIDs(_ playlist: String, token: String) -> [String] {
        playlist.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-KEY:") }.compactMap { line in
            guard let start = line.range(of: "URI=\"/v1/keys/"), let end = line.range(of: "?token=\(token)\"") else {
                return nil
            }
            return String(line[start.upperBound..<end.lowerBound])
        }
    }

    @Test(arguments: ["ts", "fmp4"])
    func aRotatedJobStoresAndServesEveryKeyOfItsAssetOnly(_ container: String) throws {
        let server = try GatewayServer(["--lease", "10m"])
        let admin = try server.token("admin")
        try FileManager.default.copyItem(atPath: fixture("clip.mp4"), toPath: server.inputRoot + "/clip.mp4")
        // Six-second segments of the ten-second clip: two segments, a key each.
        let body =
            #"{"input":"clip.mp4","asset":"rot","container":"\#(container)","keyPeriod":1,"denyKeysWhileCapturing":true}"#
        let created = try server.call("POST", "/v1/packaging-jobs", token: admin, body: body)
        try #require(created.status == 202, "\(created.text)")
        let job = try #require(created.json?["id"] as? String)
        #expect(created.json?["container"] as? String == container && created.json?["keyPeriod"] as? Int == 1)
        let finished = try server.pollJob(job, token: admin) {
            ["succeeded", "failed"].contains($0["state"] as? String)
        }
        #expect(finished?["state"] as? String == "succeeded", "\(String(describing: finished))")
        let firstKID = try #require(finished?["kid"] as? String)

        let (session, token) = try server.session("rot", token: admin)
        let video = try server.call("GET", "/v1/hls/rot/video.m3u8?token=\(token)")
        #expect(video.status == 200)
        let kids = keyIDs(video.text, token: token)
        #expect(kids.count == 2 && kids[0] == firstKID && kids[1] != firstKID, "\(video.text)")
        #expect(!video.text.contains("URI=\"/v1/keys/\(kids.last ?? "")\""), "every key line is rewritten")
        if container == "fmp4" {
            #expect(video.text.contains("#EXT-X-MAP:URI=\"video_init_p1.mp4\"\n#EXT-X-KEY:"), "\(video.text)")
            let periodInit = try server.call(
                "GET", "/v1/hls/rot/video_init_p1.mp4", headers: [("Range", "bytes=0-99")])
            #expect(periodInit.status == 206 && periodInit.body.count == 100)
            let segment = try server.call("GET", "/v1/hls/rot/video_00001.m4s", headers: [("Range", "bytes=0-7")])
            #expect(segment.status == 206 && Array(segment.body[4..<8]) == Array("moof".utf8))
        }

        // The session reports clear: every key of the asset is served, and they decrypt its periods
        // (our verifier over the job's output, with the served keys as the key list).
        #expect(try report(server, session: session, token: token, capturing: false, seq: 1).status == 200)
        var list = ""
        for kid in kids {
            let key = try server.call("GET", "/v1/keys/\(kid)?token=\(token)")
            #expect(key.status == 200 && key.body.count == 16 && key.header("Cache-Control") == "no-store")
            list += "\(kid) \(key.body.hexString)\n"
        }
        let scratch = try TemporaryDirectory()
        let listFile = scratch.path("served.keys")
        try Data(list.utf8).write(to: URL(fileURLWithPath: listFile))
        let output = server.dataDirectory + "/assets/\(job)-1"
        let verified = try guardPlay(["verify", output, "--source", fixture("clip.mp4"), "--key-file", listFile])
        #expect(verified.status == 0, "\(verified.stdout)")

        // Another asset's session gets none of them.
        let clip = try makeAESHLS(in: server.importRoot, name: "clip")
        try server.importAsset(clip, id: "clip", token: admin)
        let (_, otherToken) = try server.session("clip", token: admin)
        for kid in kids {
            let refused = try server.call("GET", "/v1/keys/\(kid)?token=\(otherToken)")
            #expect(refused.status == 403 || refused.status == 404, "\(refused.status) \(refused.text)")
            #expect(refused.body.count != 16)
        }

        // Rows after a restart: the job keeps its options, and every period's key still unwraps.
        #expect(server.stop() == 0)
        try server.start()
        let stored = try server.call("GET", "/v1/packaging-jobs/\(job)", token: admin)
        #expect(stored.json?["container"] as? String == container && stored.json?["keyPeriod"] as? Int == 1)
        let (again, againToken) = try server.session("rot", token: admin)
        #expect(try report(server, session: again, token: againToken, capturing: false, seq: 1).status == 200)
        for kid in kids {
            #expect(try server.call("GET", "/v1/keys/\(kid)?token=\(againToken)").status == 200)
        }

        // A capture starts mid-playback: the next period's key is refused, so the client holding the
        // first key cannot play past its period.
        #expect(try report(server, session: again, token: againToken, capturing: true, seq: 2).status == 200)
        let refused = try server.call("GET", "/v1/keys/\(kids[1])?token=\(againToken)")
        #expect(refused.status == 403 && refused.json?["type"] as? String == "/problems/capture-active")
    }

    @Test(arguments: [
        (#""container":"mkv""#, "container must be ts or fmp4"),
        (#""encryption":"rot13""#, "encryption must be sample-aes, cenc, aes-128 or none"),
        (#""encryption":"cenc""#, "cenc encryption needs container fmp4"),
        (#""keyPeriod":0"#, "Field 'keyPeriod' must be an integer from 1 to 100000."),
        (#""keyPeriod":100001"#, "Field 'keyPeriod' must be an integer from 1 to 100000."),
        (#""keyPeriod":"2""#, "Field 'keyPeriod' must be an integer from 1 to 100000."),
        (#""keyPeriod":1.5"#, "Field 'keyPeriod' must be an integer from 1 to 100000."),
        (#""keyPeriod":2,"encryption":"none""#, "it needs encryption"),
        (#""container":7"#, "Field 'container' must be a string of at most 16 bytes."),
    ])
    func refusesBadOptionsWithAProblem(_ member: String, _ detail: String) throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        try FileManager.default.copyItem(atPath: fixture("clip.mp4"), toPath: server.inputRoot + "/clip.mp4")
        let response = try server.call(
            "POST", "/v1/packaging-jobs", token: admin, body: #"{"input":"clip.mp4","asset":"a",\#(member)}"#)
        #expect(response.status == 422, "\(response.status) \(response.text)")
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect((response.json?["detail"] as? String)?.contains(detail) == true, "\(response.text)")
        let jobs = try server.call("GET", "/v1/packaging-jobs", token: admin)
        #expect((jobs.json?["items"] as? [Any])?.isEmpty == true, "nothing is queued")
    }
}
