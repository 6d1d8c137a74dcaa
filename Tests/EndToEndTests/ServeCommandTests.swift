import Foundation
import HTTPTestSupport
import Testing

/// `guard-play serve` and `guard-play tokens` as a user runs them: configuration errors, draining on
/// SIGTERM, and token management.
@Suite(.serialized) struct ServeCommandTests {
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
        #expect(second.stderr.contains("MHD_start_daemon(127.0.0.1:\(first.port))"))
    }

    @Test func drainsOnSIGTERMReportingNotReadyThenExitsCleanly() throws {
        let server = try GatewayServer(["--drain", "2s"])
        #expect(try server.call("GET", "/readyz").status == 200)
        let pid = server.process!.processIdentifier
        kill(pid, SIGTERM)
        usleep(300_000)
        let draining = try server.call("GET", "/readyz")
        #expect(draining.status == 503 && draining.json?["status"] as? String == "draining")
        #expect(try server.call("GET", "/livez").status == 200)
        server.process!.waitUntilExit()
        #expect(server.process!.terminationStatus == 0)
        #expect(server.log.contains("SIGTERM: draining for 2.0 s"))
        #expect(server.log.contains("stopped"))
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
