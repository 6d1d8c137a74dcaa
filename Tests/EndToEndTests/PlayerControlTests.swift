import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// `guard-play FILE --control ADDR`: the player under REST control over loopback, its capture state fed
/// by the remote source with a lease.
@Suite(.serialized, .timeLimit(.minutes(30))) struct PlayerControlTests {
    @Test func controlsAPlayingPlayerAndFeedsItsMonitorRemoteReports() throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let created = try guardPlay(["tokens", "create", "--scope", "control", "--data", data])
        let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // --loop 0 plays until stopped, however long the steps below take; the log goes to a file that
        // is polled, so no read can block past a deadline.
        let logPath = directory.path("player.stderr")
        let process = try SpawnedProcess(
            [
                guardPlayBinary, fixture("clip.mp4"), "--output", "null", "--realtime", "--loop", "0", "--status",
                "log",
                "--control", "127.0.0.1:0", "--data", data,
            ], errors: logPath)
        defer { process.end(grace: 1) }
        let port = try listeningPort(of: process, log: logPath)
        let auth = [("Authorization", "Bearer \(token)")]
        func call(_ method: String, _ target: String, _ body: String? = nil) throws -> RawResponse {
            try exchange(
                port: port, method, target, headers: auth + (body == nil ? [] : [("Content-Type", "application/json")]),
                body: body)
        }

        #expect(try exchange(port: port, "GET", "/v1/player").status == 401)
        // Its ops routes need the token too (only /livez does not), and its document is its own.
        let metrics = try exchange(port: port, "GET", "/metrics")
        #expect(metrics.status == 401 && metrics.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(try exchange(port: port, "GET", "/livez").status == 200)
        let document = try call("GET", "/v1/openapi.json")
        let paths = (document.json?["paths"] as? [String: Any]).map { Set($0.keys) } ?? []
        #expect(document.status == 200 && paths.contains("/v1/player/capture-state"))
        #expect(!paths.contains("/v1/sessions") && !paths.contains("/v1/keys/{kid}"))
        let initial = try call("GET", "/v1/player")
        #expect(initial.status == 200 && initial.json?["state"] as? String == "playing")
        // Until a client reports, the remote source says unknown and the player protects.
        #expect(initial.json?["capture"] as? String == "unknown" && initial.json?["protecting"] as? Bool == true)
        let events = try EventStreamReader(port: port, target: "/v1/player/events", headers: auth)
        #expect(events.next("status") != nil)

        let report = try call(
            "PUT", "/v1/player/capture-state",
            #"{"capturing":true,"seq":1,"observedAt":"\#(now())","leaseSeconds":1}"#)
        let player = report.json?["player"] as? [String: Any]
        #expect(report.json?["applied"] as? Bool == true)
        #expect(player?["capture"] as? String == "capturing" && player?["protecting"] as? Bool == true)
        #expect(player?["captureSource"] as? String == "remote:control")
        #expect(events.next("state", containing: #""state":"capturing""#) != nil)
        // The client stops reporting: the lease lapses and the player protects for an unknown state.
        #expect(events.next("state", containing: #""state":"unknown""#, timeout: 30)?.contains("lease lapsed") == true)
        let stale = try call(
            "PUT", "/v1/player/capture-state", #"{"capturing":false,"seq":1,"observedAt":"\#(now())"}"#)
        #expect(stale.json?["applied"] as? Bool == false)
        let clear = try call(
            "PUT", "/v1/player/capture-state", #"{"capturing":false,"seq":2,"observedAt":"\#(now())"}"#)
        #expect((clear.json?["player"] as? [String: Any])?["protecting"] as? Bool == false)

        #expect((try call("POST", "/v1/player/pause")).json?["state"] as? String == "paused")
        #expect(events.next("pause") != nil)
        #expect((try call("POST", "/v1/player/resume")).json?["state"] as? String == "playing")
        #expect((try call("POST", "/v1/player/seek", #"{"position":99}"#)).status == 422)

        process.signal(SIGTERM)
        #expect(process.wait(timeout: 30) == 130, "the player did not exit 130 within 30 s of SIGTERM")
        #expect(fileText(logPath).contains("capturing (remote:control"))
    }

    @Test func needsTheDataDirectoryOfItsTokensAndCreatesNothingWithoutIt() throws {
        let directory = try TemporaryDirectory()
        // Run from an empty directory, so a ./guard-data made by default would show.
        let missing = try run(
            "/bin/sh",
            [
                "-c", "cd \"$0\" && exec \"$1\" \"$2\" --output null --control 127.0.0.1:0", directory.path(""),
                guardPlayBinary, fixture("clip.mp4"),
            ], timeout: 60)
        #expect(missing.status == 2, "\(missing.stderr)")
        #expect(missing.stderr.contains("--control needs --data"), "\(missing.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path("")).isEmpty)

        let absent = directory.path("no-store")
        let refused = try guardPlay([
            fixture("clip.mp4"), "--output", "null", "--control", "127.0.0.1:0", "--data", absent,
        ])
        #expect(refused.status == 3 && refused.stderr.contains("guard-play tokens create"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: absent))
        // An empty directory holds no tokens either; nothing is created in it.
        let empty = directory.path("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        let none = try guardPlay([fixture("clip.mp4"), "--output", "null", "--control", "127.0.0.1:0", "--data", empty])
        #expect(none.status == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty)
    }
}

/// Now as RFC 3339 text, for reports the server checks against its clock.
private func now() -> String { ISO8601DateFormatter().string(from: Date()) }
