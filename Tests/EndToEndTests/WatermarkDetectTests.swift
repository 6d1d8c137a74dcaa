import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// `guard-play watermark detect`: a 66-second clip packaged with `--watermark ab` (2-second segments)
/// and served by a real gateway to 1000 sessions of its asset; the stream one session fetched over
/// loopback (FFmpeg decrypting SAMPLE-AES through the gateway's key endpoint) is re-encoded, scaled,
/// cropped, and recorded from GuardPlay's player window with x11grab, and the detector must name that
/// session and no other; so too for the same clip packaged as fMP4 `cbcs`. Two sessions' streams
/// averaged name one of them or nobody. Copies of another asset's session and a clear encode match
/// nobody; a still, audio and too short a copy get their own exit codes.
@Suite(.timeLimit(.minutes(30))) struct WatermarkDetectTests {
    static let kid = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    static let otherKID = "f9e8d7c6b5a4938271605f4e3d2c1b0a"
    static let fragmentedKID = "5a6b7c8d9e0f1a2b3c4d5e6f708192a3"
    static let sessionCount = 1000

    /// The gateway's data directory after serving, and the copies made from what it served. Made once
    /// for the suite; the gateway is stopped before the tests read its store.
    ///
    /// `@unchecked Sendable`: every property is set in `init` and only read afterwards.
    final class Leak: @unchecked Sendable {
        let server: GatewayServer
        let scratch: TemporaryDirectory
        /// The session whose stream was leaked, the one who colludes with it, and all of the asset's.
        let leaker: String
        let accomplice: String
        let sessions: [String]
        /// The leaker's stream as the gateway served it, decrypted by FFmpeg (video only, stream copy).
        let served: String
        /// The same source packaged as fMP4 (`cbcs`) with `--watermark ab`, asset `fragmented`: the session
        /// whose stream leaked, and the copy (as `reencoded`).
        let fragmentedLeaker: String
        let fragmentedCopy: String
        /// The copies.
        let reencoded: String
        /// The leaker's and the accomplice's streams averaged picture by picture, scaled and re-encoded.
        let colluded: String
        let cropped: String
        let otherAsset: String
        let clear: String
        let short: String

        init() throws {
            // Held by `shared` until the process exits, so removed then.
            server = try GatewayServer()
            server.directory.removedAtExit()
            scratch = try TemporaryDirectory().removedAtExit()
            let admin = try server.token("admin")
            // 66 s of 960×540 at 24 fps, detailed and moving so that no two seconds look alike: FFmpeg's
            // test pattern half blended with a blurred game of life, which keeps changing everywhere.
            let source = scratch.path("source.mp4")
            try Self.ffmpeg([
                "-f", "lavfi", "-i", "testsrc2=size=960x540:rate=24:duration=66", "-f", "lavfi", "-i",
                "life=size=240x135:rate=24:ratio=0.5:mold=10:seed=7:life_color=#e0e0e0:death_color=#202020:"
                    + "mold_color=#806040",
                "-filter_complex", "[1:v]scale=960:540,gblur=sigma=2[l];[0:v][l]blend=all_expr='(A+B)/2'",
                "-t", "66", "-c:v", "libx264", "-preset", "veryfast", "-crf", "16", "-pix_fmt", "yuv420p", source,
            ])
            let marked = server.importRoot + "/marked"
            let packaged = try guardPlay(
                [
                    "package", source, "--out", marked, "--watermark", "ab", "--segment-duration", "2", "--key",
                    testKey, "--iv", testIV, "--key-id", WatermarkDetectTests.kid, "--quiet",
                ], timeout: 900)
            try #require(packaged.status == 0, "\(packaged.stderr)")
            // Another asset with the same pictures and the same pattern: only its sessions' codewords and its
            // permutation differ.
            let other = server.importRoot + "/other"
            try FileManager.default.copyItem(atPath: marked, toPath: other)
            // Under a key ID of its own (the gateway gives each key to one asset).
            for name in try FileManager.default.contentsOfDirectory(atPath: other) where name.hasSuffix(".m3u8") {
                let text = try String(contentsOfFile: other + "/" + name, encoding: .utf8)
                try text.replacingOccurrences(of: WatermarkDetectTests.kid, with: WatermarkDetectTests.otherKID)
                    .write(toFile: other + "/" + name, atomically: true, encoding: .utf8)
            }
            let key = [UInt8](hex: testKey)!
            try server.importAsset(
                TestAsset(directory: marked, kid: WatermarkDetectTests.kid, key: key), id: "marked", token: admin)
            try server.importAsset(
                TestAsset(directory: other, kid: WatermarkDetectTests.otherKID, key: key), id: "other", token: admin)
            let fragmented = server.importRoot + "/fragmented"
            let packagedFragmented = try guardPlay(
                [
                    "package", source, "--out", fragmented, "--container", "fmp4", "--watermark", "ab",
                    "--segment-duration", "2", "--key", testKey, "--key-id", WatermarkDetectTests.fragmentedKID,
                    "--quiet",
                ], timeout: 900)
            try #require(packagedFragmented.status == 0, "\(packagedFragmented.stderr)")
            try server.importAsset(
                TestAsset(directory: fragmented, kid: WatermarkDetectTests.fragmentedKID, key: key), id: "fragmented",
                token: admin)
            let plain = try makeAESHLS(in: server.importRoot, name: "plain")
            try server.importAsset(plain, id: "plain", token: admin)

            var sessions: [(id: String, token: String)] = []
            for _ in 0..<WatermarkDetectTests.sessionCount {
                sessions.append(try server.session("marked", token: admin))
            }
            self.sessions = sessions.map(\.id)
            let chosen = sessions[WatermarkDetectTests.sessionCount / 2]
            leaker = chosen.id
            served = scratch.path("served.ts")
            try Self.fetch(server, asset: "marked", token: chosen.token, to: served)
            let partner = sessions[WatermarkDetectTests.sessionCount / 2 + 1]
            accomplice = partner.id
            let partnerServed = scratch.path("accomplice-served.ts")
            try Self.fetch(server, asset: "marked", token: partner.token, to: partnerServed)
            var fragmentedSessions: [(id: String, token: String)] = []
            for _ in 0..<WatermarkDetectTests.sessionCount {
                fragmentedSessions.append(try server.session("fragmented", token: admin))
            }
            let fragmentedChosen = fragmentedSessions[WatermarkDetectTests.sessionCount / 3]
            fragmentedLeaker = fragmentedChosen.id
            let fragmentedServed = scratch.path("fragmented-served.mp4")
            try Self.fetch(server, asset: "fragmented", token: fragmentedChosen.token, to: fragmentedServed)
            let otherServed = scratch.path("other-served.ts")
            try Self.fetch(
                server, asset: "other", token: try server.session("other", token: admin).token, to: otherServed)
            #expect(server.stop() == 0)

            // (a) From second 4 on, scaled to 640×360, x264 at CRF 28.
            reencoded = scratch.path("reencoded.mp4")
            try Self.ffmpeg([
                "-ss", "4", "-i", served, "-vf", "scale=640:360", "-c:v", "libx264", "-preset", "veryfast", "-crf",
                "28",
                reencoded,
            ])
            // (b) 5 % cropped off every side, scaled back to 960×540, at 30 fps.
            cropped = scratch.path("cropped.mp4")
            try Self.ffmpeg([
                "-i", served, "-vf", "crop=iw*0.9:ih*0.9,scale=960:540", "-r", "30", "-c:v", "libx264", "-preset",
                "veryfast", "-crf", "23", cropped,
            ])
            fragmentedCopy = scratch.path("fragmented-copy.mp4")
            try Self.ffmpeg([
                "-ss", "4", "-i", fragmentedServed, "-vf", "scale=640:360", "-c:v", "libx264", "-preset", "veryfast",
                "-crf", "28", fragmentedCopy,
            ])
            // (c) Collusion: the two sessions' pictures averaged, so that where their codewords differ the
            // marks cancel, then scaled and re-encoded as (a).
            colluded = scratch.path("colluded.mp4")
            try Self.ffmpeg([
                "-i", served, "-i", partnerServed, "-filter_complex",
                "[0:v][1:v]blend=all_expr='(A+B)/2',scale=640:360", "-c:v", "libx264", "-preset", "veryfast",
                "-crf", "28", colluded,
            ])
            otherAsset = scratch.path("other-asset.mp4")
            try Self.ffmpeg([
                "-ss", "4", "-i", otherServed, "-vf", "scale=640:360", "-c:v", "libx264", "-preset", "veryfast", "-crf",
                "28", otherAsset,
            ])
            clear = scratch.path("clear.mp4")
            try Self.ffmpeg([
                "-i", source, "-vf", "scale=640:360", "-c:v", "libx264", "-preset", "veryfast", "-crf", "28", clear,
            ])
            short = scratch.path("short.mp4")
            try Self.ffmpeg([
                "-ss", "20", "-t", "10", "-i", served, "-vf", "scale=640:360", "-c:v", "libx264", "-preset", "veryfast",
                "-crf", "28", short,
            ])
        }

        /// The video of `asset` as session `token` is served it, through the gateway on loopback, decrypted
        /// by FFmpeg's HLS demuxer (key from the gateway's key endpoint) and copied into `target`.
        private static func fetch(_ server: GatewayServer, asset: String, token: String, to target: String) throws {
            let url = "http://127.0.0.1:\(server.port)/v1/hls/\(asset)/master.m3u8?token=\(token)"
            try ffmpeg(["-i", url, "-map", "0:v", "-c", "copy", target])
            let playlist = try server.call("GET", "/v1/hls/\(asset)/video.m3u8?token=\(token)")
            #expect(playlist.text.contains("/v1/wm/\(asset)/"), "\(playlist.text)")
        }

        private static func ffmpeg(_ arguments: [String]) throws {
            let result = try run(
                "/usr/bin/ffmpeg", ["-nostdin", "-loglevel", "error", "-y"] + arguments, timeout: 900)
            try #require(result.status == 0, "ffmpeg \(arguments.joined(separator: " ")): \(result.stderr)")
        }

        /// `watermark detect` of `file` against `asset`, as JSON.
        func detect(_ file: String, asset: String = "marked", json: Bool = true) throws -> (
            status: Int32, report: [String: Any], output: ProcessResult
        ) {
            let result = try guardPlay(
                ["watermark", "detect", file, "--asset", asset, "--data", server.dataDirectory]
                    + (json ? ["--json"] : []),
                environment: server.environment, timeout: 600)
            let report =
                (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
            return (result.status, report, result)
        }
    }

    static let shared = Result { try Leak() }

    /// Prints what the detector saw, for the record.
    private func record(_ name: String, _ report: [String: Any]) {
        let keys = [
            "outcome", "session", "bestCandidate", "runnerUp", "segments", "bitErrorRate", "falseMatchProbability",
            "runnerUpBitErrorRate",
            "runnerUpFalseMatchProbability", "closeCandidates", "matchedPictures", "pictures", "mapping",
            "elapsedSeconds",
        ]
        print("watermark detect \(name): " + keys.map { "\($0)=\(report[$0] ?? "nil")" }.joined(separator: " "))
    }

    /// The leaker is named, with a false-match probability far below the threshold, and no other session
    /// comes near: the best wrong one would not pass for a match.
    private func expectNamesTheLeaker(_ file: String, _ name: String, asset: String = "marked") throws {
        let leak = try Self.shared.get()
        let (status, report, output) = try leak.detect(file, asset: asset)
        record(name, report)
        #expect(status == 0, "\(output.stdout)\(output.stderr)")
        let leaker = asset == "fragmented" ? leak.fragmentedLeaker : leak.leaker
        #expect(report["session"] as? String == leaker, "\(output.stdout)")
        #expect(report["candidates"] as? Int == Self.sessionCount)
        #expect((report["segments"] as? Int ?? 0) >= 24, "\(output.stdout)")
        #expect((report["falseMatchProbability"] as? Double ?? 1) < 1e-4, "\(output.stdout)")
        #expect((report["bitErrorRate"] as? Double ?? 1) <= 0.1, "\(output.stdout)")
        #expect((report["runnerUpFalseMatchProbability"] as? Double ?? 0) > 0.01, "\(output.stdout)")
        // Other sessions whose codewords agree with the bits read in three places of four: among 999
        // random codewords and 31 to 33 bits, chance gives 1.7 to 2.3 on average (binomial tails of 0.0017
        // to 0.0023 each) and 10 or more about once in five thousand copies; more would say the bits read
        // are not the leaker's alone.
        #expect((report["closeCandidates"] as? Int ?? 99) <= 9, "\(output.stdout)")
    }

    @Test
    func namesTheSessionOfACopyReencodedAtCRF28AndScaledTo640x360() throws {
        try expectNamesTheLeaker(try Self.shared.get().reencoded, "re-encoded")
    }

    @Test
    func namesTheSessionOfACopyCroppedAndScaledAtAnotherFrameRate() throws {
        try expectNamesTheLeaker(try Self.shared.get().cropped, "cropped")
    }

    /// The detector reads the fMP4 layout too: the variants decrypted (`cbcs`) by FFmpeg behind their init
    /// segment.
    @Test
    func namesTheSessionOfACopyOfAnFMP4Asset() throws {
        try expectNamesTheLeaker(try Self.shared.get().fragmentedCopy, "fMP4 re-encoded", asset: "fragmented")
    }

    /// The leak the watermark exists for: the served stream played in GuardPlay's own player window (at the
    /// video's 960×540, on its own Xvfb screen) and recorded with a real `ffmpeg -f x11grab` while it plays,
    /// in real time. The player runs with `--capture-source none`, standing in for a recorder it does not
    /// see: with its detectors on it would mask the window while ffmpeg grabs it.
    @Test
    func namesTheSessionOfAScreenRecordingOfAPlayerWindow() throws {
        let leak = try Self.shared.get()
        let clipSeconds = 66.0
        // The suites beside this one can starve the player or the grab (see PlayerWindowRecordingTests): a
        // recording that is not the clip in real time is made once more, and the second is judged.
        func record(_ attempt: Int) throws -> PlayerWindowRecording {
            let directory = try TemporaryDirectory()
            return try PlayerWindowRecording.record(
                leak.served, width: 960, height: 540, to: leak.scratch.path("window-\(attempt).mp4"),
                directory: directory.url.path, timeout: 240,
                player: [guardPlayBinary, leak.served, "--capture-source", "none", "--video-out", "window"])
        }
        var recording = try record(0)
        if abs(recording.duration - clipSeconds) > 3 {
            print("watermark detect window recording: the first lasted \(recording.duration) s; recording again")
            recording = try record(1)
        }
        #expect(abs(recording.duration - clipSeconds) <= 3, "\(recording.duration) s")
        try expectNamesTheLeaker(recording.path, "window recording")
    }

    /// Averaging two sessions' copies (the classic collusion attack) cancels the marks wherever their
    /// codewords differ. What the detector then says is on record in the README; what it must never do
    /// is name a third session: either it names one of the two, or nobody.
    @Test
    func averagingTwoSessionsCopiesNamesOneOfThemOrNobody() throws {
        let leak = try Self.shared.get()
        let (status, report, output) = try leak.detect(leak.colluded)
        record("colluded", report)
        #expect([0, 50].contains(status), "\(output.stdout)\(output.stderr)")
        if status == 0 {
            #expect(
                [leak.leaker, leak.accomplice].contains(report["session"] as? String ?? ""), "\(output.stdout)")
        } else {
            #expect(report["session"] is NSNull, "\(output.stdout)")
        }
        // The copy still carries the pair's common bits: the best candidate is one of the two.
        #expect(
            [leak.leaker, leak.accomplice].contains(report["bestCandidate"] as? String ?? ""), "\(output.stdout)")
    }

    @Test
    func theTextReportNamesTheSessionToo() throws {
        let leak = try Self.shared.get()
        let (status, _, output) = try leak.detect(leak.reencoded, json: false)
        #expect(status == 0)
        #expect(output.stdout.hasPrefix("session \(leak.leaker): "), "\(output.stdout)")
        #expect(output.stdout.contains("false-match probability"), "\(output.stdout)")
    }

    @Test
    func copiesOfAnotherAssetsSessionAndAClearEncodeMatchNoSession() throws {
        let leak = try Self.shared.get()
        for (name, file, asset) in [
            ("other asset", leak.otherAsset, "marked"), ("clear", leak.clear, "marked"),
            // The leaker's own copy against an asset none of whose sessions is the leaker.
            ("leaked copy against the other asset", leak.reencoded, "other"),
        ] {
            let (status, report, output) = try leak.detect(file, asset: asset)
            record(name, report)
            #expect(status == 50, "\(name): \(output.stdout)\(output.stderr)")
            #expect(report["session"] is NSNull, "\(name): \(output.stdout)")
            #expect(report["outcome"] as? String == "no-match", "\(name): \(output.stdout)")
            #expect((report["falseMatchProbability"] as? Double ?? 0) > 0.01, "\(name): \(output.stdout)")
        }
        let text = try leak.detect(leak.clear, json: false).output.stdout
        #expect(text.hasPrefix("no match"), "\(text)")
    }

    /// A detection stopped by SIGTERM or SIGINT while it works removes its scratch directory, which holds
    /// decrypted copies of the asset, and exits 130 (a process the signal simply killed would end with
    /// 143 or 130 and leave the directory behind).
    @Test(arguments: [SIGTERM, SIGINT])
    func aDetectionStoppedByASignalRemovesTheDecryptedCopiesItMade(signal: Int32) throws {
        let leak = try Self.shared.get()
        let temporary = try TemporaryDirectory()
        let logs = try TemporaryDirectory()
        var environment = leak.server.environment
        environment["TMPDIR"] = temporary.url.path
        let process = try SpawnedProcess(
            [
                guardPlayBinary, "watermark", "detect", leak.reencoded, "--asset", "marked", "--data",
                leak.server.dataDirectory,
            ], environment: environment, errors: logs.path("stderr"))
        defer { process.end() }
        func scratch() -> [String] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.url.path)) ?? []
            return names.flatMap { name in
                [name] + ((try? FileManager.default.subpathsOfDirectory(atPath: temporary.path(name))) ?? [])
            }
        }
        // Stopped once the scratch directory has files in it: a detection under way.
        let working = eventually(timeout: 60) { scratch().count >= 2 || !process.isRunning }
        try #require(working && process.isRunning, "the detection never wrote to \(temporary.url.path)")
        #expect(scratch().first?.hasPrefix("guard-play-watermark-") == true, "\(scratch())")
        process.signal(signal)
        let status = process.wait(timeout: 30)
        let errors = (try? String(contentsOfFile: logs.path("stderr"), encoding: .utf8)) ?? ""
        #expect(status == 130, "\(errors)")
        #expect(scratch() == [], "\(errors)")
    }

    @Test func aShortCopyAStillAudioAndBadAssetsGetTheirOwnExitCodes() throws {
        let leak = try Self.shared.get()
        let short = try leak.detect(leak.short)
        record("short", short.report)
        #expect(short.status == 51, "\(short.output.stdout)\(short.output.stderr)")
        #expect(short.report["session"] is NSNull)
        #expect(short.report["outcome"] as? String == "not-enough-material")
        for (file, asset, status, says) in [
            (fixture("qr-still.png"), "marked", Int32(52), "still image"),
            (fixture("song.m4a"), "marked", 53, "no video"),
            (leak.scratch.path("missing.mp4"), "marked", 10, "missing.mp4"),
            (leak.reencoded, "plain", 54, "no A/B watermark"),
            (leak.reencoded, "nosuch", 55, "no asset 'nosuch'"),
        ] {
            let result = try leak.detect(file, asset: asset, json: false).output
            #expect(result.status == status, "\(file) \(asset): \(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains(says), "\(file) \(asset): \(result.stderr)")
        }
        // No store where it is looked for: nothing is created.
        let empty = try TemporaryDirectory()
        let result = try guardPlay(
            ["watermark", "detect", leak.reencoded, "--asset", "marked", "--data", empty.path("data")],
            environment: leak.server.environment)
        #expect(result.status == 10, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: empty.path("data")))
    }
}
