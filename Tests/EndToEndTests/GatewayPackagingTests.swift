import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// Acceptance 1 (streaming end to end) and the packaging half of acceptance 5 (kill -9 during a job):
/// packaging through the API with the in-process SAMPLE-AES packager, over loopback.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayPackagingTests {
    @Test func ffmpegPlaysTheSampleAESStreamPackagedThroughTheAPI() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        try FileManager.default.copyItem(atPath: fixture("clip.mp4"), toPath: server.inputRoot + "/clip.mp4")
        let job = try server.submitJob(token: admin, input: "clip.mp4", asset: "clip", idempotencyKey: "first")
        // Retrying with the same Idempotency-Key gives the same job.
        #expect(try server.submitJob(token: admin, input: "clip.mp4", asset: "clip", idempotencyKey: "first") == job)
        let finished = try server.pollJob(job, token: admin) {
            ["succeeded", "failed"].contains($0["state"] as? String)
        }
        #expect(finished?["state"] as? String == "succeeded", "\(String(describing: finished))")
        #expect(finished?["progress"] as? Double == 1)
        let kid = try #require(finished?["kid"] as? String)
        let listed = try server.call("GET", "/v1/packaging-jobs?limit=10", token: admin)
        #expect((listed.json?["items"] as? [[String: Any]])?.first?["id"] as? String == job)

        let (_, token) = try server.session("clip", token: admin)
        let media = try server.call("GET", "/v1/hls/clip/master.m3u8?token=\(token)")
        #expect(media.status == 200)
        let playlists = media.text.split(separator: "\n").filter { $0.hasSuffix("?token=\(token)") }
        let first = try #require(playlists.first.map(String.init))
        let variant = try server.call("GET", "/v1/hls/clip/\(first)")
        #expect(
            variant.text.contains("#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"/v1/keys/\(kid)?token=\(token)\""),
            "\(variant.text)")

        // FFmpeg fetches playlists, segments and the key through the gateway with the session token,
        // and its decode matches a plain decode of the source but for FFmpeg's known gaps: the last
        // video frame in decoding order stays encrypted, and AAC from TS includes the priming frame.
        let url = "http://127.0.0.1:\(server.port)/v1/hls/clip/master.m3u8?token=\(token)"
        let decoded = try frameHashes(url)
        let reference = try frameHashes(fixture("clip.mp4"))
        let video = FrameComparison(
            decoded.first { $0.mediaType == "video" }?.hashes ?? [],
            reference.first { $0.mediaType == "video" }?.hashes ?? [], offset: 0)
        #expect(
            video.decoded == 300 && video.reference == 300 && video.equal == 299 && video.differing == [298], "\(video)"
        )
        let audio = FrameComparison(
            decoded.first { $0.mediaType == "audio" }?.hashes ?? [],
            reference.first { $0.mediaType == "audio" }?.hashes ?? [], offset: -1)
        #expect(audio.decoded == 470 && audio.equal == 469 && audio.differing == [0], "\(audio)")

        // Without the token FFmpeg gets nothing it can decrypt.
        let keyless = try server.call("GET", "/v1/keys/\(kid)")
        #expect(keyless.status == 401)
    }

    @Test(arguments: [nil, "info"] as [String?])
    func ffmpegSpeaksOnlyThroughTheGatewayLogAndOnlyWhenAsked(_ level: String?) throws {
        // Packaging a still runs libx264, which prints some twenty lines of statistics at info level.
        let server = try GatewayServer(environment: level.map { ["GUARDPLAY_FFMPEG_LOG": $0] } ?? [:])
        let admin = try server.token("admin")
        try FileManager.default.copyItem(atPath: fixture("qr-still.png"), toPath: server.inputRoot + "/still.png")
        let job = try server.submitJob(token: admin, input: "still.png", asset: "still")
        let finished = try server.pollJob(job, token: admin) {
            ["succeeded", "failed"].contains($0["state"] as? String)
        }
        #expect(finished?["state"] as? String == "succeeded", "\(String(describing: finished))")
        let lines = server.log.split(separator: "\n")
        // Every line is the gateway's own; FFmpeg's, when asked for, carry their level.
        #expect(lines.allSatisfy { $0.hasPrefix("guard-play serve: ") }, "\(server.log)")
        let x264 = lines.filter { $0.contains("libx264") }
        if level == nil {
            #expect(x264.isEmpty, "\(server.log)")
        } else {
            #expect(
                x264.contains { $0.hasPrefix("guard-play serve: ffmpeg info: [libx264 @ ") && $0.contains("frame I:") })
        }
    }

    @Test func aJobInterruptedByKill9IsRetriedAfterRestartAndNothingIsLost() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        try server.makeLongInput()
        let clip = try makeAESHLS(in: server.importRoot, name: "imported")
        try server.importAsset(clip, id: "imported", token: admin)
        let (session, sessionToken) = try server.session("imported", token: admin)

        let job = try server.submitJob(token: admin, input: "long.mp4", asset: "long", idempotencyKey: "long-1")
        // Killed while frozen mid-job, once it has written some output (stored progress from 5%).
        let kid = try #require(
            try server.whileJobRunning(job, progress: 0.05..<0.5) { () throws -> String in
                let kid = try server.storedJob(job).kid
                server.kill9()
                return kid
            })

        // What a dead process leaves: a job marked running and a partial output beside its target.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + "/assets")
        #expect(leftovers.contains { $0.hasPrefix(".\(job)") && $0.hasSuffix(".partial") }, "\(leftovers)")
        #expect(try server.query("PRAGMA integrity_check") == "ok")

        try server.start()
        // Never left running: the job is retried and finishes.
        let after = try server.pollJob(job, token: admin) {
            ["succeeded", "failed"].contains($0["state"] as? String)
        }
        #expect(after?["state"] as? String == "succeeded", "\(String(describing: after))")
        #expect(after?["attempts"] as? Int == 2)
        #expect(after?["kid"] as? String == kid, "the retry kept the key made before the crash")
        let remaining = try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + "/assets")
        #expect(remaining == ["\(job)-2"], "partial output was not cleaned up: \(remaining)")

        // Nothing lost: the job's key decrypts (it is served to a session), the imported asset's key
        // still unwraps, the session from before the crash still works, and the same
        // Idempotency-Key still names the same job.
        let (_, longToken) = try server.session("long", token: admin)
        let longKey = try server.call("GET", "/v1/keys/\(kid)?token=\(longToken)")
        #expect(longKey.status == 200 && longKey.body.count == 16)
        let importedKey = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(sessionToken)")
        #expect(importedKey.status == 200 && importedKey.body == clip.key)
        #expect(try server.call("GET", "/v1/sessions/\(session)", token: admin).status == 200)
        #expect(try server.submitJob(token: admin, input: "long.mp4", asset: "long", idempotencyKey: "long-1") == job)
        let played = try run(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-loglevel", "error", "-i",
                "http://127.0.0.1:\(server.port)/v1/hls/long/master.m3u8?token=\(longToken)",
                "-t", "5", "-f", "null", "-",
            ])
        #expect(played.status == 0, "\(played.stderr)")
    }

    @Test func cancelsARunningJobAndRemovesItsOutput() throws {
        let server = try GatewayServer()
        let admin = try server.token("package")
        try server.makeLongInput()
        let job = try server.submitJob(token: admin, input: "long.mp4", asset: "long")
        let assets = server.dataDirectory + "/assets"
        // The DELETE is sent while the server is frozen mid-job, once the job has written output, so the
        // job cannot finish before the cancel is read.
        let (client, written) = try #require(
            try server.whileJobRunning(job, progress: 0.05..<0.5) { () throws -> (RawClient, [String]) in
                let client = try RawClient(port: server.port)
                client.send(
                    "DELETE /v1/packaging-jobs/\(job) HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(admin)\r\n"
                        + "Connection: close\r\n\r\n")
                return (client, try FileManager.default.contentsOfDirectory(atPath: assets))
            })
        #expect(written.contains { $0.hasPrefix(".\(job)") }, "no output before the cancel: \(written)")
        let cancelled = RawResponse(client.read(timeout: 30))
        #expect(cancelled.status == 200 && cancelled.json?["state"] as? String == "cancelled", "\(cancelled.text)")
        let empty = eventually(timeout: 30) {
            ((try? FileManager.default.contentsOfDirectory(atPath: assets)) ?? []).isEmpty
        }
        #expect(empty, "the cancelled job's output is still there")
        #expect(
            try server.call("GET", "/v1/packaging-jobs/\(job)", token: admin).json?["state"] as? String == "cancelled")
        #expect(try server.call("GET", "/v1/assets/long", token: try server.token("control")).status == 404)
    }

    @Test func failsAJobAfterThreeInterruptedAttempts() throws {
        let server = try GatewayServer()
        let admin = try server.token("package")
        try server.makeLongInput()
        let job = try server.submitJob(token: admin, input: "long.mp4", asset: "long")
        // Three starts, each ended by kill -9 while the job runs; the gateway's own limit is 3 attempts.
        for attempt in 1...3 {
            let killed = try server.whileJobRunning(job) { () throws -> Int in
                let attempts = try server.storedJob(job).attempts
                server.kill9()
                return attempts
            }
            #expect(killed == attempt)
            try server.start()
        }
        let failed = try server.pollJob(job, token: admin, timeout: 0) { _ in true }
        #expect(failed?["state"] as? String == "failed", "\(String(describing: failed))")
        #expect(failed?["attempts"] as? Int == 3)
        #expect(failed?["error"] as? String == "interrupted by a restart after 3 attempts")
        #expect(server.log.contains("jobs: \(job) was interrupted; now failed"), "\(server.log)")
        // Not started again, and its partial output is gone.
        #expect(try server.storedJob(job).state == "failed")
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + "/assets")) ?? []
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func reportsAJobWhoseInputIsNotMediaAsFailedWithThePackagersReason() throws {
        let server = try GatewayServer()
        let admin = try server.token("package")
        try Data("just some text\n".utf8).write(to: URL(fileURLWithPath: server.inputRoot + "/notes.mp4"))
        let job = try server.submitJob(token: admin, input: "notes.mp4", asset: "notes")
        let failed = try server.pollJob(job, token: admin, timeout: 60) { $0["state"] as? String == "failed" }
        #expect((failed?["error"] as? String)?.isEmpty == false, "\(String(describing: failed))")
        #expect(try server.call("GET", "/v1/assets/notes", token: try server.token("control")).status == 404)
    }

    /// An HEVC job that names `"container":"ts"` fails with the CLI's refusal and its hint, as
    /// `guard-play package --container ts` exits 16, and publishes nothing; without a container the same
    /// input is packaged as fMP4, and the job then says so (`container` is what it produced).
    @Test func anHEVCJobAskingForTSFailsWithTheRefusalAndWithoutAContainerGetsFMP4() throws {
        let server = try GatewayServer()
        let admin = try server.token("package")
        try FileManager.default.copyItem(atPath: fixture("hevc.mp4"), toPath: server.inputRoot + "/hevc.mp4")
        let created = try server.call(
            "POST", "/v1/packaging-jobs", token: admin,
            body: #"{"input":"hevc.mp4","asset":"hevcts","container":"ts"}"#)
        try #require(created.status == 202, "\(created.text)")
        #expect(created.json?["container"] as? String == "ts")
        let job = try #require(created.json?["id"] as? String)
        let failed = try server.pollJob(job, token: admin) { ["succeeded", "failed"].contains($0["state"] as? String) }
        #expect(failed?["state"] as? String == "failed", "\(String(describing: failed))")
        let error = failed?["error"] as? String ?? ""
        #expect(error.contains("HEVC") && error.contains("--container fmp4"), "\(error)")
        #expect(try server.call("GET", "/v1/assets/hevcts", token: try server.token("control")).status == 404)

        let chosen = try server.submitJob(token: admin, input: "hevc.mp4", asset: "hevc")
        let done = try server.pollJob(chosen, token: admin) {
            ["succeeded", "failed"].contains($0["state"] as? String)
        }
        #expect(done?["state"] as? String == "succeeded", "\(String(describing: done))")
        #expect(done?["container"] as? String == "fmp4", "\(String(describing: done))")
        let listed = try server.call("GET", "/v1/packaging-jobs?limit=10", token: admin)
        let entry = (listed.json?["items"] as? [[String: Any]])?.first { $0["id"] as? String == chosen }
        #expect(entry?["container"] as? String == "fmp4", "\(listed.text)")
        let (_, token) = try server.session("hevc", token: try server.token("admin"))
        let video = try server.call("GET", "/v1/hls/hevc/video.m3u8?token=\(token)")
        #expect(video.status == 200 && video.text.contains("#EXT-X-MAP:URI=\"video_init.mp4\""), "\(video.text)")
    }
}
