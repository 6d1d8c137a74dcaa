import Crypto
import Foundation
import HTTPTestSupport
import Testing

/// The key-encryption key every test gateway runs with (through GUARDPLAY_KEK), so tests can sign
/// tokens of their own, such as expired ones.
let testKEKHex = String(repeating: "5a", count: 32)

/// A `guard-play serve` process on a loopback port chosen by the kernel, with its data, inputs and
/// import root in a temporary directory that outlives restarts.
final class GatewayServer {
    let directory: TemporaryDirectory
    let extraArguments: [String]
    private(set) var process: Process?
    private(set) var port: UInt16 = 0
    private var stderrURL: URL

    var dataDirectory: String { directory.path("data") }
    var importRoot: String { directory.path("imports") }
    var inputRoot: String { directory.path("inputs") }
    var environment: [String: String] { ["GUARDPLAY_KEK": testKEKHex] }

    init(_ arguments: [String] = []) throws {
        directory = try TemporaryDirectory()
        extraArguments = arguments
        stderrURL = directory.url.appendingPathComponent("serve.stderr")
        for path in [importRoot, inputRoot] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        try start()
    }

    deinit {
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Starts the server and waits for its "listening on" line.
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: guardPlayBinary)
        // Defaults for the test, unless the test gives the option itself.
        let defaults = [
            ("--data", dataDirectory), ("--listen", "127.0.0.1:0"), ("--drain", "0"), ("--import-root", importRoot),
            ("--input-root", inputRoot), ("--threads", "2"),
        ].filter { !extraArguments.contains($0.0) }
        process.arguments = ["serve"] + defaults.flatMap { [$0.0, $0.1] } + extraArguments
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        let stdout = Pipe()
        process.standardOutput = stdout
        if !FileManager.default.fileExists(atPath: stderrURL.path) {
            _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        }
        let stderr = try FileHandle(forWritingTo: stderrURL)
        stderr.seekToEndOfFile()
        process.standardError = stderr
        try process.run()
        self.process = process
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !text.contains("\n") {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let range = text.range(of: "listening on http://127.0.0.1:"),
            let port = UInt16(text[range.upperBound...].prefix { $0.isNumber })
        else {
            throw RawClientError("guard-play serve did not start: \(text) \(log)")
        }
        self.port = port
    }

    /// What the server wrote to standard error so far.
    var log: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM and waits for a clean exit; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        guard let process, process.isRunning else { return process?.terminationStatus ?? -1 }
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Kills the server with SIGKILL, as a crash would.
    func kill9() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Whether the process is still running.
    var isRunning: Bool { process?.isRunning ?? false }

    /// Creates an API token with `scopes` through `guard-play tokens create`.
    func token(_ scopes: String = "admin") throws -> String {
        let result = try guardPlay(
            ["tokens", "create", "--scope", scopes, "--data", dataDirectory], environment: environment)
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

    /// Creates a session on `asset`; returns its ID and token.
    func session(_ asset: String, token: String) throws -> (id: String, token: String) {
        let response = try call("POST", "/v1/sessions", token: token, body: #"{"asset":"\#(asset)"}"#)
        guard response.status == 201, let json = response.json, let id = json["id"] as? String,
            let sessionToken = json["token"] as? String
        else { throw RawClientError("session failed: \(response.status) \(response.text)") }
        return (id, sessionToken)
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
