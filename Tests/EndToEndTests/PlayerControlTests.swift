import Foundation
import HTTPTestSupport
import Testing

/// `guard-play FILE --control ADDR`: the player under REST control over loopback, its capture state fed
/// by the remote source with a lease.
@Suite(.serialized) struct PlayerControlTests {
    @Test func controlsAPlayingPlayerAndFeedsItsMonitorRemoteReports() throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let created = try guardPlay(["tokens", "create", "--scope", "control", "--data", data])
        let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: guardPlayBinary)
        process.arguments = [
            fixture("clip.mp4"), "--output", "null", "--realtime", "--status", "log", "--control", "127.0.0.1:0",
            "--data", data,
        ]
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        var log = ""
        while !log.contains("listening on http://127.0.0.1:") || !log.contains("\n") {
            let chunk = stderr.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            log += String(decoding: chunk, as: UTF8.self)
        }
        let range = try #require(log.range(of: "listening on http://127.0.0.1:"), "\(log)")
        let port = try #require(UInt16(log[range.upperBound...].prefix { $0.isNumber }))
        let auth = [("Authorization", "Bearer \(token)")]
        func call(_ method: String, _ target: String, _ body: String? = nil) throws -> RawResponse {
            try exchange(
                port: port, method, target, headers: auth + (body == nil ? [] : [("Content-Type", "application/json")]),
                body: body)
        }

        #expect(try exchange(port: port, "GET", "/v1/player").status == 401)
        let initial = try call("GET", "/v1/player")
        #expect(initial.status == 200 && initial.json?["state"] as? String == "playing")
        // Until a client reports, the remote source says unknown and the player protects.
        #expect(initial.json?["capture"] as? String == "unknown" && initial.json?["protecting"] as? Bool == true)
        let events = try EventStreamReader(port: port, target: "/v1/player/events", headers: auth)
        #expect(events.next("status") != nil)

        let report = try call(
            "PUT", "/v1/player/capture-state",
            #"{"capturing":true,"seq":1,"observedAt":"2027-01-01T00:00:00Z","leaseSeconds":1}"#)
        let player = report.json?["player"] as? [String: Any]
        #expect(report.json?["applied"] as? Bool == true)
        #expect(player?["capture"] as? String == "capturing" && player?["protecting"] as? Bool == true)
        #expect(player?["captureSource"] as? String == "remote:control")
        #expect(events.next("state", containing: #""state":"capturing""#) != nil)
        // The client stops reporting: the lease lapses and the player protects for an unknown state.
        #expect(events.next("state", containing: #""state":"unknown""#, timeout: 5)?.contains("lease lapsed") == true)
        let stale = try call(
            "PUT", "/v1/player/capture-state", #"{"capturing":false,"seq":1,"observedAt":"2027-01-01T00:00:01Z"}"#)
        #expect(stale.json?["applied"] as? Bool == false)
        let clear = try call(
            "PUT", "/v1/player/capture-state", #"{"capturing":false,"seq":2,"observedAt":"2027-01-01T00:00:02Z"}"#)
        #expect((clear.json?["player"] as? [String: Any])?["protecting"] as? Bool == false)

        #expect((try call("POST", "/v1/player/pause")).json?["state"] as? String == "paused")
        #expect(events.next("pause") != nil)
        #expect((try call("POST", "/v1/player/resume")).json?["state"] as? String == "playing")
        #expect((try call("POST", "/v1/player/seek", #"{"position":99}"#)).status == 422)

        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 130)
        log += String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("capturing (remote:control"))
    }
}
