import Foundation
import HTTPTestSupport
import PostgresTestSupport
import Testing

/// Acceptance 4: hostile requests against the built gateway; each gets a 4xx and the server stays up.
/// Each runs on both stores (SQLite, and PostgreSQL as a several-node deployment runs).
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayHostileTests {
    struct Hostile: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int
        let raw: String
        var testDescription: String { name }
    }

    static let requests: [Hostile] = [
        Hostile(
            name: "malformed JSON", status: 400,
            raw:
                "POST /v1/sessions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer TOKEN\r\nContent-Type: application/json\r\n"
                + "Content-Length: 9\r\n\r\n{\"asset\":"),
        Hostile(
            name: "JSON nested too deep", status: 400,
            raw: "POST /v1/sessions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer TOKEN\r\nContent-Length: 2000\r\n\r\n"
                + String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)),
        Hostile(
            name: "oversized body by Content-Length", status: 413,
            raw:
                "POST /v1/sessions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer TOKEN\r\nContent-Length: 10000000\r\n\r\n{"
        ),
        Hostile(
            name: "oversized chunked body", status: 413,
            raw:
                "PUT /v1/assets/x HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer TOKEN\r\nTransfer-Encoding: chunked\r\n\r\n"
                + String(repeating: "4000\r\n" + String(repeating: "a", count: 16384) + "\r\n", count: 5) + "0\r\n\r\n"),
        Hostile(
            name: "..%2f traversal", status: 400, raw: "GET /v1/hls/clip/..%2f..%2fkek HTTP/1.1\r\nHost: t\r\n\r\n"),
        Hostile(name: "../ traversal", status: 400, raw: "GET /v1/hls/clip/../../kek HTTP/1.1\r\nHost: t\r\n\r\n"),
        Hostile(
            name: "%00 in the path", status: 400, raw: "GET /v1/hls/clip/seg0.ts%00.m3u8 HTTP/1.1\r\nHost: t\r\n\r\n"),
        Hostile(name: "%00 in the query", status: 400, raw: "GET /v1/keys/abc?token=%00 HTTP/1.1\r\nHost: t\r\n\r\n"),
        Hostile(
            name: "very long segment", status: 404,
            raw: "GET /v1/hls/clip/\(String(repeating: "a", count: 3000)).ts HTTP/1.1\r\nHost: t\r\n\r\n"),
        Hostile(
            name: "path beyond the target limit", status: 414,
            raw: "GET /v1/hls/\(String(repeating: "a", count: 5000)) HTTP/1.1\r\nHost: t\r\n\r\n"),
        Hostile(
            name: "CL+TE smuggling", status: 400,
            raw:
                "POST /v1/sessions HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                + "GET /v1/keys/x HTTP/1.1\r\nHost: t\r\n\r\n"),
        Hostile(
            name: "TE obfuscation", status: 400,
            raw: "POST /v1/sessions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"),
        Hostile(
            name: "duplicate Content-Length", status: 400,
            raw: "POST /v1/sessions HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 20\r\n\r\n{}"),
        Hostile(
            name: "header flood", status: 431,
            raw: "GET /livez HTTP/1.1\r\nHost: t\r\n"
                + (0..<500).map { "X-Flood-\($0): \(String(repeating: "z", count: 60))\r\n" }.joined()
                + "\r\n"),
        Hostile(name: "no Host", status: 400, raw: "GET /livez HTTP/1.1\r\n\r\n"),
        Hostile(
            name: "two Host fields", status: 400,
            raw: "GET /v1/keys/00000000000000000000000000000000 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        Hostile(
            name: "forged API token", status: 401,
            raw:
                "GET /v1/assets HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer gp_0000000000000000_\(String(repeating: "0", count: 64))\r\n\r\n"
        ),
    ]

    @Test(arguments: StoreBackend.allCases) func refusesEachHostileRequestAndStaysUp(_ backend: StoreBackend) throws {
        let server = try GatewayServer(
            try backend.serveArguments() + ["--header-timeout", "1s", "--max-body", "65536"])
        let admin = try server.token("admin")
        for hostile in Self.requests {
            let client = try RawClient(port: server.port)
            client.send(hostile.raw.replacingOccurrences(of: "TOKEN", with: admin))
            let response = RawResponse(client.read(timeout: 10) { RawResponse($0).isComplete })
            #expect(
                response.status == hostile.status, "\(hostile.name): \(response.status) \(response.text.prefix(200))")
            #expect((400..<500).contains(response.status), "\(hostile.name)")
            #expect(server.isUp, "\(hostile.name) took the server down")
        }
        // Over the socket too, a repeated Host is the server's own problem+json refusal, and a 401 challenges.
        let twoHosts = try RawClient(port: server.port)
        twoHosts.send(Self.requests.first { $0.name == "two Host fields" }!.raw)
        let refused = RawResponse(twoHosts.read(timeout: 10) { RawResponse($0).isComplete })
        #expect(refused.status == 400 && refused.json?["type"] as? String == "/problems/repeated-host")
        let forged = try RawClient(port: server.port)
        forged.send(Self.requests.first { $0.name == "forged API token" }!.raw)
        let challenged = RawResponse(forged.read(timeout: 10) { RawResponse($0).isComplete })
        #expect(challenged.header("WWW-Authenticate") == #"Bearer realm="guard-play", error="invalid_token""#)
        // A smuggled request after CL+TE is never answered: the connection closes after the 400.
        let smuggler = try RawClient(port: server.port)
        smuggler.send(Self.requests.first { $0.name == "CL+TE smuggling" }!.raw)
        let answers = String(decoding: smuggler.read(timeout: 3), as: UTF8.self)
        #expect(answers.components(separatedBy: "HTTP/1.1 ").count == 2)
        #expect(server.isRunning)
    }

    @Test(arguments: StoreBackend.allCases) func answersASlowlorisClientWith408AndKeepsServingOthers(
        _ backend: StoreBackend
    ) throws {
        let server = try GatewayServer(try backend.serveArguments() + ["--header-timeout", "1s"])
        let slow = try (0..<20).map { _ in try RawClient(port: server.port) }
        for client in slow { client.send("GET /livez HTTP/1.1\r\nHost: t\r\n") }
        var timedOut = 0
        for round in 0..<12 {
            #expect(server.isUp, "others are not served while slowloris clients hold connections")
            for client in slow { client.send("X-Drip-\(round): 1\r\n") }
            usleep(250_000)
        }
        for client in slow where RawResponse(client.read(timeout: 3)).status == 408 { timedOut += 1 }
        #expect(timedOut == slow.count)
        #expect(server.isUp)
    }

    @Test(arguments: StoreBackend.allCases) func answersATrickledBodyWith408AndKeepsServingOthers(
        _ backend: StoreBackend
    ) throws {
        let server = try GatewayServer(try backend.serveArguments() + ["--body-timeout", "1s"])
        let admin = try server.token("admin")
        let trickler = try RawClient(port: server.port)
        trickler.send(
            "POST /v1/sessions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(admin)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"asset\":\"")
        // A byte every 200 ms would finish the body after 40 s; the deadline answers first.
        var received: [UInt8] = []
        for _ in 0..<200 where received.isEmpty {
            #expect(server.isUp, "others are not served while a client trickles its body")
            trickler.send("a")
            received += trickler.read(timeout: 0.2)
        }
        let response = RawResponse(received + trickler.read(timeout: 2))
        #expect(response.status == 408, "\(response.text)")
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.json?["type"] as? String == "/problems/body-timeout")
        #expect(server.isUp)
        let metrics = try server.call("GET", "/metrics").text
        #expect(metrics.contains("guardplay_http_rejections_total{reason=\"body-timeout\"} 1"), "\(metrics)")
    }

    @Test(arguments: StoreBackend.allCases) func refusesConnectionsOverThePerIPLimitAndKeepsServingOthers(
        _ backend: StoreBackend
    ) throws {
        let server = try GatewayServer(try backend.serveArguments() + ["--per-ip-connection-limit", "4"])
        // Four kept-alive connections, each answered once, so the server has counted them all.
        let held = try (0..<4).map { _ in try RawClient(port: server.port) }
        for client in held {
            client.send("GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(client.readResponse().status == 200)
        }
        try withExtendedLifetime(held) {
            // A fifth from the same address is closed unanswered; another address is served.
            let over = try RawClient(port: server.port)
            over.send("GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(over.read(timeout: 5).isEmpty)
            let other = try RawClient(port: server.port, source: "127.0.0.2")
            other.send("GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(other.readResponse().status == 200)
        }
        #expect(server.isRunning)
    }

    @Test(arguments: StoreBackend.allCases) func limitsEachAddressTo128ConnectionsByDefault(_ backend: StoreBackend)
        throws
    {
        // The header deadline and the reads are long, so that a server starved of CPU by a busy machine
        // answers late rather than with the watchdog's 408 (a CI run beside two fuzzers once saw no 200 of
        // 128 within the default 10 s); the limit is what this test is about.
        let server = try GatewayServer(try backend.serveArguments() + ["--header-timeout", "120s"])
        let held = try (0..<128).map { _ in try RawClient(port: server.port) }
        for client in held { client.send("GET /livez HTTP/1.1\r\nHost: t\r\n\r\n") }
        let statuses = held.map { $0.readResponse(timeout: 60).status }
        #expect(
            statuses.filter { $0 == 200 }.count == 128,
            "statuses \(Dictionary(grouping: statuses) { $0 }.mapValues(\.count))")
        try withExtendedLifetime(held) {
            let over = try RawClient(port: server.port)
            over.send("GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(over.read(timeout: 5).isEmpty)
        }
    }

    @Test(arguments: StoreBackend.allCases) func answersABodyOfManyJSONMembersPromptly(_ backend: StoreBackend) throws {
        // 600,000 distinct members (7 MB) under an 8 MiB --max-body: a parser that scanned the earlier
        // members for each one would take hours; the answer must come within the read's deadline.
        let server = try GatewayServer(try backend.serveArguments() + ["--max-body", "8388608"])
        let admin = try server.token("control")
        var body = "{"
        body.reserveCapacity(600_000 * 12)
        for index in 0..<600_000 { body += "\"k\(index)\":0," }
        body += "\"asset\":\"clip\"}"
        let response = try exchange(
            port: server.port, "POST", "/v1/sessions",
            headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")], body: body,
            timeout: 120)
        #expect(response.status == 422, "\(response.status) \(response.text.prefix(300))")
        #expect(response.json?["type"] as? String == "/problems/invalid-field")
        #expect(server.isUp)
    }

    @Test(arguments: StoreBackend.allCases) func survivesConnectionsThatVanishMidRequest(_ backend: StoreBackend) throws
    {
        let server = try GatewayServer(try backend.serveArguments())
        for index in 0..<50 {
            let client = try RawClient(port: server.port)
            client.send(
                "POST /v1/sessions HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"asset\":" + String(index))
        }
        #expect(server.isUp)
    }
}
