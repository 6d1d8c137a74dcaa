import ControlAPI
import Foundation
import Gateway
import HTTPServer
import Store
import Synchronization

/// A clock the test moves by hand.
final class ManualClock: GatewayClock {
    private let current: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    func now() -> Date { current.withLock { $0 } }

    func advance(_ seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// A directory under the system's temporary directory, removed when released.
final class Scratch {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("gw-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` to `name` (creating directories) and returns the absolute path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let file = path + "/" + name
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }
}

let testKEK = try! KeyEncryptionKey(bytes: Array(repeating: 7, count: 32))
let clipKID = "00112233445566778899aabbccddeeff"
let clipKey: [UInt8] = Array(0..<16)

/// The playlists and segments of a small packaged asset, as a packager would leave them.
func writePackagedAsset(in scratch: Scratch, directory: String, keyURI: String) throws -> String {
    try scratch.write(
        "\(directory)/master.m3u8",
        """
        #EXTM3U
        #EXT-X-VERSION:5
        #EXT-X-STREAM-INF:BANDWIDTH=800000,CODECS="avc1.64001e,mp4a.40.2",RESOLUTION=640x360
        media.m3u8
        #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100000,URI="iframes.m3u8"

        """)
    try scratch.write(
        "\(directory)/media.m3u8",
        """
        #EXTM3U
        #EXT-X-VERSION:5
        #EXT-X-TARGETDURATION:6
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="\(keyURI)",IV=0x000102030405060708090a0b0c0d0e0f
        #EXTINF:6.0,
        seg0.ts
        #EXT-X-ENDLIST

        """)
    try scratch.write("\(directory)/iframes.m3u8", "#EXTM3U\n#EXT-X-I-FRAMES-ONLY\n")
    try scratch.write("\(directory)/seg0.ts", String(repeating: "G", count: 1880))
    try scratch.write("\(directory)/key.bin", "sixteen byte key")
    return scratch.path + "/" + directory
}

/// A gateway over a fresh store with the `clip` asset imported.
final class GatewayFixture {
    let scratch: Scratch
    let clock = ManualClock()
    let store: any Store
    let gateway: Gateway

    /// A gateway over SQLite under the scratch directory, or over the PostgreSQL database at
    /// `postgres` when given.
    init(
        engine: (any PackagingEngine)? = nil, auditWriter: (any AuditWriting)? = nil, postgres: String? = nil,
        configure: (inout GatewayConfiguration) -> Void = { _ in }
    ) throws {
        scratch = try Scratch()
        store =
            try postgres.map { try PostgresStore(url: $0, kek: testKEK) }
            ?? SQLiteStore(directory: scratch.path + "/data", kek: testKEK)
        var configuration = GatewayConfiguration(
            dataDirectory: scratch.path + "/data", inputRoot: scratch.path + "/inputs",
            importRoots: [scratch.path + "/imports"])
        configure(&configuration)
        try FileManager.default.createDirectory(atPath: configuration.inputRoot, withIntermediateDirectories: true)
        let log = LogSink()
        gateway = try Gateway(
            configuration: configuration, store: store, kek: testKEK, engine: engine, clock: clock,
            auditWriter: auditWriter, log: log.append)
        self.logSink = log
        let directory = try writePackagedAsset(in: scratch, directory: "imports/clip", keyURI: "key.bin")
        _ = try gateway.importAsset(
            id: "clip", directory: directory, keys: [ImportedKey(kid: clipKID, key: clipKey, uri: nil)],
            denyKeysWhileCapturing: false)
    }

    let logSink: LogSink
}

final class LogSink: Sendable {
    let lines = Mutex([String]())
    var append: @Sendable (String) -> Void { { line in self.lines.withLock { $0.append(line) } } }
}

extension GatewayFixture {
    /// Starts the gateway and serves its API on a loopback port the kernel picks.
    func startLive() throws -> HTTPServer {
        try gateway.start()
        let router = GatewayAPI.router(
            gateway: gateway, state: ServiceState(), publicURL: nil, corsOrigins: [], log: { _ in })
        let server = GatewayAPI.server(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), router: router)
        try server.start()
        return server
    }
}
