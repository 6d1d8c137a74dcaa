import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// `guard-play serve` and `guard-play tokens` as a user runs them: configuration errors, draining on
/// SIGTERM, and token management.
@Suite(.serialized, .timeLimit(.minutes(30))) struct ServeCommandTests {
    @Test(arguments: [
        ("listen = nowhere", "config FILE:1: invalid value 'nowhere' for listen: expected HOST:PORT"),
        ("# ok\nthreads = 0", "config FILE:2: invalid value '0' for threads: expected an integer from 1 to 256"),
        ("lease = forever", "config FILE:1: invalid value 'forever' for lease: expected a duration"),
        ("color = blue", "config FILE:1: unknown key 'color'"),
        ("just text", "config FILE:1: expected 'key = value'"),
        ("drain = 1s\ndrain = 2s", "config FILE:2: 'drain' given twice"),
        ("cors-origins = ftp://x", "invalid CORS origin 'ftp://x'"),
    ])
    func refusesABadConfigurationWithTheLineAndTheReason(_ text: String, _ message: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("bad.conf")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try guardPlay(["serve", "--config", path, "--check-config"])
        #expect(result.status == 3)
        #expect(result.stderr.contains(message.replacingOccurrences(of: "FILE", with: path)), "\(result.stderr)")
    }

    @Test func refusesBadOptionsAndSaysWhenTheAddressIsTaken() throws {
        #expect(try guardPlay(["serve", "--no-such-option"]).status == 2)
        #expect(try guardPlay(["serve", "extra"]).status == 2)
        #expect(try guardPlay(["serve", "--listen", "127.0.0.1:99999", "--check-config"]).status == 3)
        #expect(try guardPlay(["serve", "--config", "/nonexistent.conf"]).status == 10)
        let first = try GatewayServer()
        let directory = try TemporaryDirectory()
        let second = try guardPlay(
            ["serve", "--listen", "127.0.0.1:\(first.port)", "--data", directory.path("data")],
            environment: first.environment, timeout: 30)
        #expect(second.status == 1)
        #expect(
            second.stderr.contains("guard-play: bind(127.0.0.1:\(first.port)): address already in use (EADDRINUSE)"),
            "\(second.stderr)")
        #expect(!second.stderr.contains("port 0"), "\(second.stderr)")
        // An address that is not this machine's says so too (192.0.2.1 is TEST-NET-1, never local).
        let foreign = try guardPlay(
            ["serve", "--listen", "192.0.2.1:\(first.port)", "--data", directory.path("data")],
            environment: first.environment, timeout: 30)
        #expect(foreign.status == 1)
        #expect(foreign.stderr.contains("bind(192.0.2.1:\(first.port)): "), "\(foreign.stderr)")
        #expect(foreign.stderr.contains("(EADDRNOTAVAIL): the address is not one of this machine's"))
    }

    @Test func drainsOnSIGTERMReportingNotReadyThenExitsCleanly() throws {
        // A drain period far longer than the test needs: a second SIGTERM ends it.
        let server = try GatewayServer(["--drain", "60s"])
        #expect(try server.call("GET", "/readyz").status == 200)
        server.signal(SIGTERM)
        var draining: RawResponse?
        #expect(
            eventually(timeout: 30) {
                draining = try? server.call("GET", "/readyz")
                return draining?.status == 503
            }, "/readyz did not turn 503: \(draining?.text ?? "no answer")")
        #expect(draining?.json?["status"] as? String == "draining")
        #expect(try server.call("GET", "/livez").status == 200)
        server.signal(SIGTERM)
        // Well inside the 60 s drain period: the second signal ended it.
        #expect(server.waitForExit(timeout: 30) == 0, "\(server.log)")
        #expect(server.log.contains("SIGTERM: draining for 60.0 s"))
        #expect(server.log.contains("stopped"))
    }

    @Test func drainingEndsEventStreamsAndRequeuesARunningJob() throws {
        let server = try GatewayServer()
        let (admin, _, session, token) = try server.servingClip()
        let events = try EventStreamReader(port: server.port, target: "/v1/sessions/\(session)/events?token=\(token)")
        #expect(events.next("capture-state") != nil)
        try server.makeLongInput()
        let job = try server.submitJob(token: admin, input: "long.mp4", asset: "long")

        // SIGTERM (with no drain period) while the job runs; the server is frozen as the signal is
        // sent, so the job cannot finish first.
        try #require(try server.whileJobRunning(job) { server.signal(SIGTERM) } != nil)
        #expect(events.ended(timeout: 30), "\(events.transcript)")
        #expect(server.waitForExit(timeout: 60) == 0)
        #expect(try server.storedJob(job).state == "queued")
        #expect(server.log.contains("jobs: \(job) interrupted by shutdown; requeued"), "\(server.log)")
    }

    @Test func answersBrowsersFromTheCORSOriginsItWasGiven() throws {
        let server = try GatewayServer(["--cors-origin", "https://player.example"])
        let preflight = try server.call(
            "OPTIONS", "/v1/keys/abc",
            headers: [
                ("Origin", "https://player.example"), ("Access-Control-Request-Method", "GET"),
                ("Access-Control-Request-Headers", "Range"),
            ])
        #expect(preflight.status == 204, "\(preflight.status) \(preflight.text)")
        #expect(preflight.header("Access-Control-Allow-Origin") == "https://player.example")
        #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Range") == true)
        let echoed = try server.call("GET", "/v1/openapi.json", headers: [("Origin", "https://player.example")])
        #expect(echoed.header("Access-Control-Allow-Origin") == "https://player.example")
        // One origin: the same answer for every Origin (a browser elsewhere refuses it), so no Vary.
        #expect(echoed.header("Vary") == nil)
        #expect(echoed.header("Access-Control-Allow-Credentials") == nil)
        let stranger = try server.call("GET", "/v1/openapi.json", headers: [("Origin", "https://evil.example")])
        #expect(stranger.status == 200 && stranger.header("Access-Control-Allow-Origin") == "https://player.example")
        let refused = try server.call(
            "OPTIONS", "/v1/keys/abc",
            headers: [("Origin", "https://evil.example"), ("Access-Control-Request-Method", "GET")])
        #expect(refused.status == 403)
    }

    @Test func createsListsAndRevokesAPITokens() throws {
        let server = try GatewayServer()
        let token = try server.token("control")
        #expect(token.hasPrefix("gp_") && token.count == 3 + 16 + 1 + 64)
        #expect(try server.call("GET", "/v1/assets", token: token).status == 200)
        #expect(try server.call("GET", "/v1/packaging-jobs", token: token).status == 403)
        let id = String(token.dropFirst(3).prefix(16))
        let list = try guardPlay(["tokens", "list", "--data", server.dataDirectory], environment: server.environment)
        #expect(list.stdout.contains("\(id)\tcontrol\tactive\ttoken"))
        #expect(!list.stdout.contains(token))
        let revoke = try guardPlay(
            ["tokens", "revoke", id, "--data", server.dataDirectory], environment: server.environment)
        #expect(revoke.status == 0)
        let refused = try server.call("GET", "/v1/assets", token: token)
        #expect(refused.status == 401 && refused.json?["type"] as? String == "/problems/api-token-revoked")
        let bad = try guardPlay(["tokens", "create", "--scope", "root", "--data", server.dataDirectory])
        #expect(bad.status == 3 && bad.stderr.contains("invalid value 'root' for --scope"))
        #expect(try guardPlay(["tokens", "create", "--data", server.dataDirectory]).status == 2)
        #expect(
            try guardPlay(
                ["tokens", "revoke", "nope", "--data", server.dataDirectory], environment: server.environment
            ).status == 3)
    }
}
