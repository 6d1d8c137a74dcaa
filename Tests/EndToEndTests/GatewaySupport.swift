import Crypto
import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// The key-encryption key every test gateway runs with (through GUARDPLAY_KEK), so tests can sign
/// tokens of their own, such as expired ones.
let testKEKHex = String(repeating: "5aa5", count: 16)

/// A `guard-play serve` process on a loopback port chosen by the kernel, with its data, inputs and
/// import root in a temporary directory that outlives restarts. Every wait on it has a deadline: its
/// output goes to files that are polled, and its exit is waited for with `SpawnedProcess`.
final class GatewayServer {
    let directory: TemporaryDirectory
    let extraArguments: [String]
    /// Put before `guard-play serve` on the server's command line (a tracer, say).
    let launcher: [String]
    /// The user the server and `tokens` run as, with no capabilities (through setpriv), when it is
    /// not the test's own; it owns the temporary directory.
    let user: uid_t?
    private(set) var process: SpawnedProcess?
    private(set) var port: UInt16 = 0
    private let stdoutPath: String
    private let stderrPath: String

    /// The `--data` the test gave, or the server's own under its directory.
    var dataDirectory: String {
        extraArguments.firstIndex(of: "--data").map { extraArguments[$0 + 1] } ?? directory.path("data")
    }
    var importRoot: String { directory.path("imports") }
    var inputRoot: String { directory.path("inputs") }
    var database: String { dataDirectory + "/guardplay.db" }
    /// GUARDPLAY_KEK, and whatever else the test set.
    let environment: [String: String]

    init(
        _ arguments: [String] = [], launcher: [String] = [], user: uid_t? = nil,
        environment extra: [String: String] = [:]
    ) throws {
        directory = try TemporaryDirectory()
        extraArguments = arguments
        self.launcher = launcher
        self.user = user
        environment = ["GUARDPLAY_KEK": testKEKHex].merging(extra) { $1 }
        stdoutPath = directory.path("serve.stdout")
        stderrPath = directory.path("serve.stderr")
        for path in [importRoot, inputRoot] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        if let user {
            for path in [directory.url.path, importRoot, inputRoot] where chown(path, user, user) != 0 {
                throw RawClientError("chown \(path): \(String(cString: strerror(errno)))")
            }
        }
        try start()
    }

    deinit { process?.end(grace: 1) }

    /// Starts the server and waits (30 s at most) for its "listening on" line.
    func start() throws {
        // A process that was killed is reaped before its successor starts.
        process?.end(grace: 0)
        // Defaults for the test, unless the test gives the option itself.
        let defaults = [
            ("--data", dataDirectory), ("--listen", "127.0.0.1:0"), ("--drain", "0"), ("--import-root", importRoot),
            ("--input-root", inputRoot), ("--threads", "2"),
        ].filter { !extraArguments.contains($0.0) }
        let offset = fileText(stdoutPath).utf8.count
        let process = try SpawnedProcess(
            asUser + launcher + [guardPlayBinary, "serve"] + defaults.flatMap { [$0.0, $0.1] } + extraArguments,
            environment: environment, output: stdoutPath, errors: stderrPath)
        self.process = process
        var listening: UInt16?
        _ = eventually(timeout: 30) {
            listening = listeningPort(in: String(fileText(stdoutPath).utf8.dropFirst(offset)) ?? "")
            return listening != nil || !process.isRunning
        }
        guard let listening else {
            let status = process.exitStatus.map { "exited \($0)" } ?? "still running after 30 s"
            process.end(grace: 0)
            throw RawClientError("guard-play serve did not start (\(status)): \(log)")
        }
        port = listening
    }

    /// setpriv's command line that runs what follows as `user`, with no capabilities and no way to gain any.
    private var asUser: [String] {
        user.map {
            [
                "/usr/bin/setpriv", "--reuid=\($0)", "--regid=\($0)", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all",
            ]
        } ?? []
    }

    /// What the server wrote to standard error so far.
    var log: String { fileText(stderrPath) }

    /// Sends `number` to the server.
    func signal(_ number: Int32) { process?.signal(number) }

    /// Waits up to `timeout` seconds for the server to exit and returns its status; when it has not
    /// exited by then, records an issue, kills it and returns nil.
    func waitForExit(timeout: Double = 60) -> Int32? {
        guard let process else { return nil }
        guard let status = process.wait(timeout: timeout) else {
            Issue.record("guard-play serve did not exit within \(timeout) s")
            process.end(grace: 0)
            return nil
        }
        return status
    }

    /// Sends SIGTERM and waits for the exit; returns the exit status (-1 when it did not exit in time).
    @discardableResult
    func stop() -> Int32 {
        signal(SIGTERM)
        return waitForExit() ?? -1
    }

    /// Kills the server with SIGKILL, as a crash would.
    func kill9() {
        signal(SIGKILL)
        _ = waitForExit(timeout: 30)
    }

    /// Runs `body` while the server is stopped (SIGSTOP), so nothing in it moves on while the test
    /// looks at its files or queues a request; it continues (SIGCONT) afterwards.
    func whileFrozen<T>(_ body: () throws -> T) rethrows -> T {
        signal(SIGSTOP)
        defer { signal(SIGCONT) }
        return try body()
    }

    /// Whether the process is still running.
    var isRunning: Bool { process?.isRunning ?? false }

    /// Creates an API token with `scopes` through `guard-play tokens create`.
    func token(_ scopes: String = "admin") throws -> String {
        // The same store as the server's: `--store` when the test gave one.
        let store = extraArguments.firstIndex(of: "--store").map { ["--store", extraArguments[$0 + 1]] } ?? []
        let command =
            asUser + [guardPlayBinary, "tokens", "create", "--scope", scopes, "--data", dataDirectory] + store
        let result = try run(command[0], Array(command.dropFirst()), environment: environment)
        guard result.status == 0 else { throw RawClientError("tokens create failed: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// One request with an optional API token.
    func call(
        _ method: String, _ target: String, token: String? = nil, body: String? = nil, headers: [(String, String)] = []
    ) throws -> RawResponse {
        var fields = headers
        if let token { fields.append(("Authorization", "Bearer \(token)")) }
        if body != nil { fields.append(("Content-Type", "application/json")) }
        return try exchange(port: port, method, target, headers: fields, body: body)
    }

    /// True while `/livez` answers 200.
    var isUp: Bool { (try? call("GET", "/livez").status) == 200 }

    /// Imports `asset` (an HLS directory under the import root) with `key`, through the API.
    func importAsset(_ asset: TestAsset, id: String, token: String, denyKeysWhileCapturing: Bool = false) throws {
        let body = """
            {"directory":"\(asset.directory)","denyKeysWhileCapturing":\(denyKeysWhileCapturing),
             "keys":[{"kid":"\(asset.kid)","key":"\(asset.key.hexString)"}]}
            """
        let response = try call("PUT", "/v1/assets/\(id)", token: token, body: body)
        guard response.status == 201 || response.status == 200 else {
            throw RawClientError("import failed: \(response.status) \(response.text)")
        }
    }

    /// An admin token, the clip imported as `clip` (AES-128 HLS) and a session on it.
    func servingClip(denyKeysWhileCapturing: Bool = false) throws -> (
        admin: String, clip: TestAsset, session: String, token: String
    ) {
        let admin = try token("admin")
        let clip = try makeAESHLS(in: importRoot, name: "clip")
        try importAsset(clip, id: "clip", token: admin, denyKeysWhileCapturing: denyKeysWhileCapturing)
        let (session, sessionToken) = try session("clip", token: admin)
        return (admin, clip, session, sessionToken)
    }

    /// Reports the session's capture state (observed now) with its own token.
    func reportCapture(session: String, token: String, capturing: Bool, seq: Int) throws -> RawResponse {
        try call(
            "PUT", "/v1/sessions/\(session)/capture-state?token=\(token)",
            body:
                #"{"capturing":\#(capturing),"seq":\#(seq),"observedAt":"\#(ISO8601DateFormatter().string(from: Date()))"}"#
        )
    }

    /// Creates a session on `asset`; returns its ID and token.
    func session(_ asset: String, token: String) throws -> (id: String, token: String) {
        let response = try call("POST", "/v1/sessions", token: token, body: #"{"asset":"\#(asset)"}"#)
        guard response.status == 201, let json = response.json, let id = json["id"] as? String,
            let sessionToken = json["token"] as? String
        else { throw RawClientError("session failed: \(response.status) \(response.text)") }
        return (id, sessionToken)
    }
}

// MARK: Packaging jobs

extension GatewayServer {
    /// Posts a packaging job and returns its ID.
    func submitJob(token: String, input: String, asset: String, idempotencyKey: String? = nil) throws -> String {
        let response = try call(
            "POST", "/v1/packaging-jobs", token: token, body: #"{"input":"\#(input)","asset":"\#(asset)"}"#,
            headers: idempotencyKey.map { [("Idempotency-Key", $0)] } ?? [])
        guard response.status == 202, let id = response.json?["id"] as? String else {
            throw RawClientError("job not accepted: \(response.status) \(response.text)")
        }
        #expect(response.header("Location") == "/v1/packaging-jobs/\(id)")
        return id
    }

    /// The job's JSON once `done` says so, polled every 20 ms for at most `timeout` seconds.
    func pollJob(_ job: String, token: String, timeout: Double = 120, until done: ([String: Any]) -> Bool) throws
        -> [String: Any]?
    {
        var found: [String: Any]?
        _ = eventually(timeout: timeout) {
            found = try? call("GET", "/v1/packaging-jobs/\(job)", token: token).json
            return found.map(done) ?? false
        }
        return found.map(done) == true ? found : nil
    }

    /// Writes `name` under the input root: the clip looped `loops` times (120: 20 minutes of media,
    /// seconds of packaging), so a job on it runs long enough to be caught running.
    func makeLongInput(_ name: String = "long.mp4", loops: Int = 120) throws {
        let made = try run(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-loglevel", "error", "-stream_loop", String(loops), "-i", fixture("clip.mp4"), "-c",
                "copy",
                inputRoot + "/" + name,
            ])
        guard made.status == 0 else { throw RawClientError("ffmpeg could not make \(name): \(made.stderr)") }
    }

    /// The result of `sql` on the server's database, read with the sqlite3 CLI (which works while the
    /// server is frozen): one line a row, columns separated by `|`.
    func query(_ sql: String) throws -> String {
        let result = try run("/usr/bin/sqlite3", ["-cmd", ".timeout 5000", database, sql])
        guard result.status == 0 else { throw RawClientError("sqlite3 \(sql): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A packaging job as stored. The gateway stores progress in steps of 5%.
    struct StoredJob {
        let state: String
        let progress: Double
        let attempts: Int
        let kid: String
    }

    /// The job as stored.
    func storedJob(_ job: String) throws -> StoredJob {
        let row = try query("SELECT state, progress, attempts, kid FROM packaging_jobs WHERE id = '\(job)'")
        let fields = row.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 4, let progress = Double(fields[1]), let attempts = Int(fields[2]) else {
            throw RawClientError("no stored job \(job): '\(row)'")
        }
        return StoredJob(state: fields[0], progress: progress, attempts: attempts, kid: fields[3])
    }

    /// Waits (for at most `timeout` seconds) until `job` is stored as running with its progress in
    /// `progress`, and runs `body` at that moment with the server frozen, so the job cannot move on
    /// (or finish) before `body` has acted. Returns nil, having recorded an issue, when the job was
    /// never seen so: it finished or failed first, or never started.
    func whileJobRunning<T>(
        _ job: String, progress: Range<Double> = 0..<0.5, timeout: Double = 120, _ body: () throws -> T
    ) throws -> T? {
        let deadline = Date().addingTimeInterval(timeout)
        var last = StoredJob(state: "unknown", progress: 0, attempts: 0, kid: "")
        while Date() < deadline {
            let outcome = try whileFrozen { () throws -> T? in
                last = try storedJob(job)
                guard last.state == "running", progress.contains(last.progress) else { return nil }
                return try body()
            }
            if let outcome { return outcome }
            let tooLate = last.state == "running" && last.progress >= progress.upperBound
            guard last.state == "queued" || last.state == "running", !tooLate else { break }
            usleep(20_000)
        }
        Issue.record("job \(job) was never seen running with progress in \(progress): last \(last)")
        return nil
    }
}

/// An AES-128 HLS rendition of a fixture made with FFmpeg, with its key.
struct TestAsset {
    let directory: String
    let kid: String
    let key: [UInt8]
}

/// Packages `source` with FFmpeg's HLS muxer as AES-128 (whole-segment) HLS under `root/name`, with
/// `master.m3u8`, `media.m3u8` and 2-second segments, its key URI naming no key ID (the gateway maps
/// it because the asset has one key).
func makeAESHLS(from source: String = fixture("clip.mp4"), in root: String, name: String, segmentSeconds: Int = 2)
    throws -> TestAsset
{
    let directory = root + "/" + name
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let key = try SecureRandom.bytes(16)
    let keyFile = root + "/\(name).key"
    try Data(key).write(to: URL(fileURLWithPath: keyFile))
    let keyInfo = root + "/\(name).keyinfo"
    try "key.bin\n\(keyFile)\n\(try SecureRandom.bytes(16).hexString)\n".write(
        toFile: keyInfo, atomically: true, encoding: .utf8)
    let result = try run(
        "/usr/bin/ffmpeg",
        [
            "-nostdin", "-loglevel", "error", "-y", "-i", source, "-c", "copy", "-f", "hls", "-hls_time",
            String(segmentSeconds), "-hls_playlist_type", "vod", "-hls_key_info_file", keyInfo,
            "-hls_segment_filename", directory + "/seg%d.ts", "-master_pl_name", "master.m3u8",
            directory + "/media.m3u8",
        ])
    guard result.status == 0 else { throw RawClientError("ffmpeg failed: \(result.stderr)") }
    return TestAsset(directory: directory, kid: try SecureRandom.bytes(16).hexString, key: key)
}

/// A session token signed with the test KEK, as the gateway signs them (for expired tokens).
func signedToken(session: String, asset: String, expiresAt: Int64) -> String {
    let signingKey = Digest.hmacSHA256(key: [UInt8](hex: testKEKHex)!, data: Array("guardplay/session-token/v1".utf8))
    let payload = "v1.\(session).\(asset).\(expiresAt)"
    let mac = Data(Digest.hmacSHA256(key: signingKey, data: Array(payload.utf8))).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
    return payload + "." + mac
}

/// The text of the file at `path`, or "" when it cannot be read.
func fileText(_ path: String) -> String {
    (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
}

/// The port `process` says it listens on in its log at `logPath`, waited for 30 s at most; throws when
/// it exits first or says nothing.
func listeningPort(of process: SpawnedProcess, log logPath: String) throws -> UInt16 {
    var listening: UInt16?
    _ = eventually(timeout: 30) {
        listening = listeningPort(in: fileText(logPath))
        return listening != nil || !process.isRunning
    }
    guard let listening else { throw RawClientError("no 'listening on' line: \(fileText(logPath))") }
    return listening
}

/// The port in the first complete `listening on http://HOST:PORT` line of `text`, or nil.
func listeningPort(in text: String) -> UInt16? {
    guard let range = text.range(of: "listening on http://") else { return nil }
    let line = text[range.upperBound...].prefix { $0 != "\n" }
    guard line.endIndex < text.endIndex, let colon = line.lastIndex(of: ":") else { return nil }
    let digits = line[line.index(after: colon)...]
    guard !digits.isEmpty, digits.allSatisfy(\.isNumber) else { return nil }
    return UInt16(digits)
}
