import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// What the gateway and the player's control server expose: the KEK checks `--check-config` and a
/// real start share, systemd's credential for the KEK, and addresses other hosts can reach.
@Suite(.serialized, .timeLimit(.minutes(30))) struct ServeExposureTests {
    /// A KEK the real start refuses is refused by `--check-config` with the same message, so a
    /// systemd unit fails its ExecStartPre instead of restart-looping.
    @Test func checkConfigRefusesEveryKEKTheRealStartRefuses() throws {
        let directory = try TemporaryDirectory()
        let shared = directory.path("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        let key = String(repeating: "ab01", count: 16) + "\n"
        let readable = directory.path("readable.kek")
        let foreign = directory.path("foreign.kek")
        let exposed = shared + "/kek"
        for path in [readable, foreign, exposed] { try key.write(toFile: path, atomically: true, encoding: .utf8) }
        chmod(readable, 0o644)
        for path in [foreign, exposed] { chmod(path, 0o600) }
        try #require(chown(foreign, 65534, 65534) == 0, "chown needs root")
        chmod(shared, 0o777)
        let cases: [(environment: [String: String], options: [String], message: String)] = [
            (["GUARDPLAY_KEK": "abcd"], [], "KeyEncryptionKey(GUARDPLAY_KEK): must be 64 hexadecimal digits"),
            (["GUARDPLAY_KEK": String(repeating: "0", count: 64)], [], "all 32 bytes are the same (00)"),
            ([:], ["--kek-file", readable], "the file is readable by others (mode 644)"),
            ([:], ["--kek-file", foreign], "the file is owned by uid 65534, not by this process's user"),
            ([:], ["--kek-file", exposed], "the directory \(shared) is writable by others (mode 777)"),
        ]
        for (index, test) in cases.enumerated() {
            let options = ["serve", "--listen", "127.0.0.1:0", "--data", directory.path("data\(index)")] + test.options
            let checked = try guardPlay(options + ["--check-config"], environment: test.environment)
            let started = try guardPlay(options, environment: test.environment, timeout: 30)
            #expect(checked.status == 1 && started.status == 1, "\(test.options): \(checked.stdout)\(started.stdout)")
            #expect(checked.stderr.contains(test.message), "\(checked.stderr)")
            #expect(checked.stderr == started.stderr)
            #expect(!checked.stdout.contains("configuration ok"))
        }
        // The check creates nothing; it says where the key will come from.
        let fresh = try guardPlay(["serve", "--data", directory.path("fresh"), "--check-config"])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        #expect(fresh.stdout.contains("kek \(directory.path("fresh"))/kek (created on start)"), "\(fresh.stdout)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("fresh")))
    }

    /// `LoadCredential=kek:/etc/guardplay/kek` gives the service `$CREDENTIALS_DIRECTORY/kek`, root's
    /// and mode 0440 where the ACL that lets the service read it shows its mask in the group bits.
    @Test func takesTheKEKFromSystemdsCredentialsDirectory() throws {
        let directory = try TemporaryDirectory()
        let credentials = directory.path("credentials")
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        let key = String(repeating: "c3d4", count: 16)
        try (key + "\n").write(toFile: credentials + "/kek", atomically: true, encoding: .utf8)
        try #require(chown(credentials + "/kek", 0, 0) == 0 && chmod(credentials + "/kek", 0o440) == 0)
        let data = directory.path("data")
        let environment = ["CREDENTIALS_DIRECTORY": credentials]
        let checked = try guardPlay(["serve", "--data", data, "--check-config"], environment: environment)
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stdout.contains("kek \(credentials)/kek"), "\(checked.stdout)")
        // The same key opens the store every time, and none is made under --data.
        let created = try guardPlay(["tokens", "create", "--scope", "admin", "--data", data], environment: environment)
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try guardPlay(["tokens", "list", "--data", data], environment: environment).status == 0)
        #expect(!FileManager.default.fileExists(atPath: data + "/kek"))
        // Outside the credentials directory the same file is taken as readable by its group.
        let elsewhere = try guardPlay(["serve", "--data", data, "--kek-file", credentials + "/kek", "--check-config"])
        #expect(
            elsewhere.status == 1 && elsewhere.stderr.contains("readable by others (mode 440)"), "\(elsewhere.stderr)")
    }

    @Test func serveWarnsOnceWhenItListensBeyondLoopbackOverPlainHTTP() throws {
        let warning = "warning: listening on 0.0.0.0 over plain HTTP"
        let public_ = try GatewayServer(["--listen", "0.0.0.0:0"])
        #expect(try public_.call("GET", "/livez").status == 200)
        #expect(public_.log.components(separatedBy: warning).count == 2, "\(public_.log)")
        let loopback = try GatewayServer()
        #expect(try loopback.call("GET", "/livez").status == 200)
        #expect(!loopback.log.contains("warning"), "\(loopback.log)")
    }

    @Test func thePlayersControlServerRefusesAPublicAddressUnlessAskedExplicitly() throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let player = [guardPlayBinary, fixture("clip.mp4"), "--output", "null", "--realtime", "--loop", "0"]
        for address in ["0.0.0.0:0", "[::]:0", "192.0.2.1:0"] {
            let refused = try run(player[0], Array(player.dropFirst()) + ["--control", address, "--data", data])
            #expect(refused.status == 2, "\(address): \(refused.stderr)")
            #expect(refused.stderr.contains("--control \(address) is not a loopback address"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--control-public"))
        }
        #expect(!FileManager.default.fileExists(atPath: data), "a refused start touched --data")
        #expect(try guardPlay([fixture("clip.mp4"), "--control-public"]).status == 2)
        // The player serves only a store that already holds its tokens.
        let created = try guardPlay(["tokens", "create", "--scope", "control", "--data", data])
        try #require(created.status == 0, "\(created.stderr)")

        let logPath = directory.path("player.stderr")
        let process = try SpawnedProcess(
            player + ["--control", "0.0.0.0:0", "--control-public", "--data", data], errors: logPath)
        defer { process.end(grace: 1) }
        let port = try listeningPort(of: process, log: logPath)
        #expect(try exchange(port: port, "GET", "/v1/player").status == 401)
        #expect(fileText(logPath).contains("warning: listening on 0.0.0.0 over plain HTTP"), "\(fileText(logPath))")
    }
}
