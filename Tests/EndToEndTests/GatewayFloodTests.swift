import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// Issue 9, sections 2 and 3: floods of refused key requests, event streams and slow headers against
/// the built gateway on real loopback sockets. None may fill the disk, hold every connection, or keep
/// a valid session, `/livez` or an operator's revoke from being answered.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayFloodTests {
    @Test func countsTokenlessRefusalsRateLimitsThemAndStillGrantsAValidSession() throws {
        let server = try GatewayServer()
        let (_, clip, _, token) = try server.servingClip()
        let flooder = try RawClient(port: server.port, source: "127.0.0.2")
        var statuses: [Int: Int] = [:]
        var limited: RawResponse?
        for index in 0..<600 {
            flooder.send("GET /v1/keys/\(clip.kid) HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = flooder.readResponse()
            statuses[response.status, default: 0] += 1
            if response.status == 429 { limited = limited ?? response }
            if index % 100 == 0 {
                // A valid session from the flooder's own address and from another still gets its key.
                let granted = try request(server.port, from: "127.0.0.2", "/v1/keys/\(clip.kid)?token=\(token)")
                #expect(granted.status == 200 && granted.body == clip.key)
                #expect(try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 200)
            }
        }
        #expect(statuses[401, default: 0] >= 30 && statuses[429, default: 0] >= 300, "\(statuses)")
        #expect(statuses[401, default: 0] + statuses[429, default: 0] == 600, "\(statuses)")
        #expect(limited?.header("Retry-After").flatMap(Int.init).map { $0 >= 1 } == true)
        #expect(limited?.header("Content-Type") == "application/problem+json")
        #expect(limited?.json?["type"] as? String == "/problems/rate-limited")
        let metrics = try server.call("GET", "/metrics").text
        #expect(metrics.contains("guardplay_key_requests_total{outcome=\"rate-limited\"}"))
        #expect(metrics.contains("guardplay_store_bytes "))

        // 600 refusals are a few counted rows, not 600 records; every grant is a record of its own.
        #expect(server.stop() == 0)
        #expect(try server.query("SELECT count(*) FROM audit WHERE action = 'key' AND outcome = 'refused'") == "0")
        #expect(try server.query("SELECT count(*) FROM audit WHERE action = 'key' AND outcome = 'granted'") == "12")
        let rows = Int(try server.query("SELECT count(*) FROM audit_refusals")) ?? 0
        #expect(rows >= 2 && rows <= 4, "\(rows) rows")
        #expect(try server.query("SELECT sum(count) FROM audit_refusals WHERE remote = '127.0.0.2'") == "600")
    }

    @Test func capsEventStreamsAndKeepsConnectionsForKeysLivezAndRevoke() throws {
        let server = try GatewayServer([
            "--connection-limit", "16", "--max-streams", "8", "--per-ip-connection-limit", "0",
        ])
        let (admin, clip, first, firstToken) = try server.servingClip()
        let (second, secondToken) = try server.session("clip", token: admin)
        let third = try server.session("clip", token: admin)
        let open = { (session: String, token: String) in
            try EventStreamReader(port: server.port, target: "/v1/sessions/\(session)/events?token=\(token)")
        }
        var held = try (0..<4).map { _ in try open(first, firstToken) }
        #expect(held.allSatisfy { $0.status == 200 })
        // A fifth stream for one session: 429 with Retry-After.
        let fifth = try open(first, firstToken)
        #expect(fifth.status == 429, "\(fifth.transcript)")
        #expect(RawResponse(Array(fifth.transcript.utf8)).header("Retry-After") == "5")
        #expect(RawResponse(Array(fifth.transcript.utf8)).header("Connection") == "close")
        held += try (0..<4).map { _ in try open(second, secondToken) }
        #expect(held.allSatisfy { $0.status == 200 })
        // The gateway's total: 503 with Retry-After, even for a session with none open.
        let over = try open(third.id, third.token)
        #expect(over.status == 503, "\(over.transcript)")
        #expect(RawResponse(Array(over.transcript.utf8)).header("Retry-After") != nil)

        // The connections left over still answer, at once.
        let started = Date()
        #expect(try server.call("GET", "/livez").status == 200)
        #expect(try server.call("GET", "/v1/keys/\(clip.kid)?token=\(third.token)").status == 200)
        #expect(try server.call("DELETE", "/v1/sessions/\(first)", token: admin).status == 204)
        #expect(Date().timeIntervalSince(started) < 3)
        // The revoked session's streams end, and their places are free again.
        for stream in held.prefix(4) { #expect(stream.next("revoked") != nil) }
        var reopened: EventStreamReader?
        _ = eventually(timeout: 10) {
            reopened = try? open(third.id, third.token)
            return reopened?.status == 200
        }
        #expect(reopened?.status == 200)
        withExtendedLifetime(held) {}
    }

    @Test func aDistributedSlowlorisKeepsNoClientOutLongerThanTheHeaderTimeout() throws {
        let server = try GatewayServer([
            "--connection-limit", "40", "--per-ip-connection-limit", "8", "--header-timeout", "2",
        ])
        // 48 connections from six addresses, more than the server takes, each holding a header open.
        var slow: [RawClient] = []
        for address in 2...7 {
            for _ in 0..<8 {
                let client = try RawClient(port: server.port, source: "127.0.0.\(address)")
                client.send("GET /livez HTTP/1.1\r\nHost: t\r\nX-Slow: ")
                slow.append(client)
            }
        }
        for client in slow { client.send("a") }
        let started = Date()
        var answered: RawResponse?
        // A client retries when the server turns its connection away, as browsers do.
        while answered == nil && Date().timeIntervalSince(started) < 6 {
            let response = try request(server.port, from: "127.0.0.1", "/livez", timeout: 6)
            if response.status == 200 { answered = response }
        }
        let waited = Date().timeIntervalSince(started)
        #expect(answered?.status == 200)
        // It did wait (the slow clients held every connection), but no longer than the header timeout
        // and the watchdog's half-second tick, with a margin for a loaded machine.
        #expect(waited > 1 && waited < 2 + 2, "a legitimate client waited \(waited) s behind the slowloris")
        withExtendedLifetime(slow) {}
    }

    @Test func takesTheClientFromXForwardedForOnlyFromATrustedProxy() throws {
        let server = try GatewayServer(["--trusted-proxy", "127.0.0.2/32"])
        let (_, clip, _, token) = try server.servingClip()
        let forwarded = [("X-Forwarded-For", "203.0.113.9, 198.51.100.7")]
        let key = "/v1/keys/\(clip.kid)?token=\(token)"
        #expect(try request(server.port, from: "127.0.0.2", key, headers: forwarded).status == 200)
        #expect(try request(server.port, from: "127.0.0.3", key, headers: forwarded).status == 200)

        // The limits follow the client too: one client behind the proxy is limited, the next is not.
        var statuses: [Int] = []
        for _ in 0..<80 {
            statuses.append(
                try request(
                    server.port, from: "127.0.0.2", "/v1/keys/\(clip.kid)",
                    headers: [("X-Forwarded-For", "198.51.100.7")]
                ).status)
        }
        #expect(statuses.contains(429), "\(statuses)")
        let next = try request(
            server.port, from: "127.0.0.2", "/v1/keys/\(clip.kid)", headers: [("X-Forwarded-For", "198.51.100.8")])
        #expect(next.status == 401)
        #expect(server.stop() == 0)
        let remotes = try server.query(
            "SELECT remote FROM audit WHERE action = 'key' AND outcome = 'granted' ORDER BY seq")
        #expect(remotes.split(separator: "\n") == ["198.51.100.7", "127.0.0.3"])
        let counted = try server.query("SELECT DISTINCT remote FROM audit_refusals ORDER BY remote")
        #expect(counted.split(separator: "\n") == ["198.51.100.7", "198.51.100.8"])
    }

    @Test func takesTrustedProxiesFromTheConfigFileAndRefusesOneThatIsNotAnAddress() throws {
        let directory = try TemporaryDirectory()
        let config = directory.path("serve.conf")
        try "trusted-proxy = 127.0.0.1, 10.0.0.0/8, ::1\naudit-retention = 7d\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let accepted = try guardPlay(["serve", "--config", config, "--data", directory.path("data"), "--check-config"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let result = try guardPlay(["serve", "--trusted-proxy", "nginx.local", "--check-config"])
        #expect(result.status == 3)
        #expect(result.stderr.contains("'nginx.local' is not an IP address or CIDR range"), "\(result.stderr)")
        let streams = try guardPlay(["serve", "--connection-limit", "10", "--max-streams", "10", "--check-config"])
        #expect(streams.status == 3 && streams.stderr.contains("must be below --connection-limit"))
    }
}

/// One request from the loopback address `source` on a connection of its own.
private func request(
    _ port: UInt16, from source: String, _ target: String, headers: [(String, String)] = [], timeout: Double = 10
) throws -> RawResponse {
    let client = try RawClient(port: port, source: source)
    var text = "GET \(target) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    client.send(text + "\r\n")
    return client.readResponse(timeout: timeout)
}
