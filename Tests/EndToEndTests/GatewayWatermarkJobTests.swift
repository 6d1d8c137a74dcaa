import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// Packaging jobs with `"watermark": "ab"` and `"segmentDuration"`, as `guard-play package --watermark ab
/// --segment-duration` takes them: the job's output is served per session like an imported watermarked
/// asset, over loopback.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayWatermarkJobTests {
    /// The segment URIs of a playlist's text.
    private func uris(_ playlist: String) -> [String] {
        playlist.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty }
    }

    @Test func aWatermarkedJobServesEachSessionItsOwnVariantsAndRefusesAnotherSessions() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        let job = try server.packageWatermarkedClip(token: admin)

        // The asset has the watermark of 2-second segments, and its variant files are the job's output.
        let summary = try #require(
            try server.call("GET", "/v1/assets/marked", token: admin).json?["watermark"] as? [String: Any])
        #expect(summary["codewordBits"] as? Int == 64 && summary["segmentSeconds"] as? Double == 2, "\(summary)")
        let output = try server.query("SELECT output FROM packaging_jobs WHERE id = '\(job)'")
        let stored = try uris(String(contentsOfFile: output + "/video.m3u8", encoding: .utf8))
        #expect(stored == (0..<5).map { String(format: "video_%05d.a.ts", $0) }, "\(stored)")
        let files = try stored.map { name in
            try [name, name.replacingOccurrences(of: ".a.ts", with: ".b.ts")].map {
                try [UInt8](Data(contentsOf: URL(fileURLWithPath: output + "/" + $0)))
            }
        }
        #expect(files.allSatisfy { $0[0] != $0[1] }, "the two variants of a segment are the same file")

        // Sessions until one is given another variant of some segment than the first (five segments:
        // two sessions pick the same five with probability 1/32, twelve with about 2^-55).
        var sessions: [(id: String, token: String, paths: [String], variants: [Bool])] = []
        while sessions.count < 12 && (sessions.count < 2 || sessions.last!.variants == sessions[0].variants) {
            let (id, token) = try server.session("marked", token: admin)
            let playlist = try server.call("GET", "/v1/hls/marked/video.m3u8?token=\(token)")
            #expect(playlist.status == 200)
            let paths = uris(playlist.text)
            #expect(paths.count == 5 && paths.allSatisfy { $0.hasPrefix("/v1/wm/marked/\(id)/") }, "\(paths)")
            var variants: [Bool] = []
            for (index, path) in paths.enumerated() {
                let segment = try server.call("GET", path)
                #expect(segment.status == 200, "\(path): \(segment.text)")
                #expect(segment.body == files[index][0] || segment.body == files[index][1], "\(path)")
                variants.append(segment.body == files[index][1])
            }
            sessions.append((id, token, paths, variants))
        }
        let first = sessions[0]
        let other = try #require(sessions.last)
        #expect(other.variants != first.variants, "twelve sessions were all given the same variants")
        #expect(Set(first.paths).isDisjoint(with: other.paths))
        // The other session's variant of a segment where they differ, under the first session's ID: 403.
        let index = try #require(first.variants.indices.first { first.variants[$0] != other.variants[$0] })
        let borrowed = try server.call(
            "GET", other.paths[index].replacingOccurrences(of: "/\(other.id)/", with: "/\(first.id)/"))
        #expect(
            borrowed.status == 403 && borrowed.header("Content-Type") == "application/problem+json"
                && borrowed.text.contains("watermark-variant-refused"), "\(borrowed.status) \(borrowed.text)")
        // Neither variant file by its own name, with a valid token.
        for name in [stored[index], stored[index].replacingOccurrences(of: ".a.ts", with: ".b.ts")] {
            #expect(try server.call("GET", "/v1/hls/marked/\(name)?token=\(first.token)").status == 403)
        }

        // FFmpeg plays the first session's stream through the gateway, decrypted: ten seconds of video.
        let url = "http://127.0.0.1:\(server.port)/v1/hls/marked/master.m3u8?token=\(first.token)"
        let played = try run(
            "/usr/bin/ffprobe",
            [
                "-v", "error", "-select_streams", "v", "-count_frames", "-show_entries", "stream=nb_read_frames",
                "-of", "csv=p=0", url,
            ], timeout: 300)
        // One count for the stream and one for the program it is in.
        let counts = played.stdout.split(whereSeparator: \.isNewline).filter { !$0.isEmpty }
        #expect(played.status == 0 && !counts.isEmpty && counts.allSatisfy { $0 == "300" }, "\(played.stdout)")
    }

    /// A body member, the problem's code and what its detail says (not "Unknown field": that is what a
    /// gateway that does not know the member says).
    @Test(arguments: [
        (#""watermark":"abc""#, "invalid-watermark", "watermark must be ab"),
        (#""watermark":"AB""#, "invalid-watermark", "watermark must be ab"),
        (#""watermark":5"#, "invalid-field", "Field 'watermark' must be a string"),
        (#""segmentDuration":0.5"#, "invalid-field", "Field 'segmentDuration' must be a number"),
        (#""segmentDuration":61"#, "invalid-field", "Field 'segmentDuration' must be a number"),
        (#""segmentDuration":"2""#, "invalid-field", "Field 'segmentDuration' must be a number"),
    ])
    func refusesABadWatermarkOrSegmentDurationAndQueuesNothing(_ member: String, _ code: String, _ says: String)
        throws
    {
        let server = try GatewayServer()
        let admin = try server.token("package")
        try FileManager.default.copyItem(atPath: fixture("clip.mp4"), toPath: server.inputRoot + "/clip.mp4")
        let refused = try server.call(
            "POST", "/v1/packaging-jobs", token: admin, body: #"{"input":"clip.mp4","asset":"marked",\#(member)}"#)
        #expect(
            refused.status == 422 && refused.header("Content-Type") == "application/problem+json", "\(refused.text)")
        #expect(refused.json?["type"] as? String == "/problems/\(code)", "\(refused.text)")
        #expect((refused.json?["detail"] as? String)?.hasPrefix(says) == true, "\(refused.text)")
        let listed = try server.call("GET", "/v1/packaging-jobs", token: admin)
        #expect((listed.json?["items"] as? [Any])?.isEmpty == true, "\(listed.text)")
    }
}

extension GatewayServer {
    /// Packages the `clip` fixture through a job with `"watermark": "ab"` and 2-second segments as asset
    /// `asset`, waits for it to succeed, and returns the job's ID.
    func packageWatermarkedClip(token: String, asset: String = "marked") throws -> String {
        try FileManager.default.copyItem(atPath: fixture("clip.mp4"), toPath: inputRoot + "/clip.mp4")
        let created = try call(
            "POST", "/v1/packaging-jobs", token: token,
            body: #"{"input":"clip.mp4","asset":"\#(asset)","watermark":"ab","segmentDuration":2}"#)
        try #require(created.status == 202, "\(created.text)")
        #expect(created.json?["watermark"] as? String == "ab" && created.json?["segmentDuration"] as? Double == 2)
        let job = try #require(created.json?["id"] as? String)
        let finished = try pollJob(job, token: token, timeout: 600) {
            ["succeeded", "failed"].contains($0["state"] as? String)
        }
        try #require(finished?["state"] as? String == "succeeded", "\(String(describing: finished))")
        return job
    }
}
