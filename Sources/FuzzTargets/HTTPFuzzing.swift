import ControlAPI
import Foundation
import Gateway
import HTTPServer

/// The HTTP hygiene layer, driven without a socket.
///
/// The input is a raw request: a request line, header lines and a body, split the way libmicrohttpd
/// splits them (it owns that grammar on the wire). Everything after is GuardPlay's own code: the
/// server's screen, the body cap, the target split, the `X-Forwarded-For` walk, then the player
/// control router with its path and query grammar, bearer tokens, CORS and JSON bodies.
enum HTTPFuzzing {
    /// A small body cap, so inputs reach it.
    static let configuration: HTTPServerConfiguration = {
        var configuration = HTTPServerConfiguration(maxBodyBytes: 512, maxHeaderCount: 16, maxTargetLength: 256)
        if case .success(let proxies) = TrustedProxies.parse(["127.0.0.1", "10.0.0.0/8", "::1"]) {
            configuration.trustedProxies = proxies
        }
        return configuration
    }()

    /// The one API token the router accepts, with the `control` scope.
    static let token = "gp_fuzz"

    static let router = PlayerAPI.router(
        player: StillPlayer(), state: ServiceState(), metrics: Metrics(),
        authenticate: { bearer in
            guard let bearer else { return .failure(.missing) }
            return bearer == token ? .success([.control]) : .failure(.invalid)
        },
        log: { _ in }, now: { Date(timeIntervalSince1970: 1_767_225_600) })

    static func request(_ data: UnsafeRawBufferPointer) {
        guard let head = RawRequest(data) else { return }
        if let rejection = configuration.screen(version: head.version, target: head.target, headers: head.headers) {
            precondition((400..<500).contains(rejection.status), "screen refused with \(rejection.status)")
            _ = router.respond(to: rejection)
            return
        }
        // The body arrives in pieces of up to 100 bytes, as a slow client would send it.
        var body = RequestBody(cap: configuration.maxBodyBytes)
        var offset = 0
        while offset < head.body.count {
            let end = min(offset + 100, head.body.count)
            let more = head.body[offset..<end].withUnsafeBytes { body.append($0) }
            offset = end
            if !more { return }
        }
        if body.overCap {
            _ = router.respond(to: configuration.bodyTooLarge)
            return
        }
        precondition(body.bytes == head.body, "a body under the cap was not kept whole")
        let (path, query) = splitTarget(head.target)
        let client = configuration.trustedProxies.client(
            peer: "127.0.0.1", forwardedFor: head.headers.values("X-Forwarded-For"))
        let request = HTTPRequest(
            method: head.method, path: path, query: query, headers: head.headers, body: body.bytes,
            remoteAddress: client, peerAddress: "127.0.0.1")
        let response = router.respond(to: request)
        // Every refusal is a client error; a 500 means a handler failed on input it should refuse.
        precondition(response.status < 500, "\(head.method) \(head.target) answered \(response.status)")
    }
}

/// A request as libmicrohttpd hands it over: `METHOD SP TARGET SP VERSION`, then `Name: value` lines
/// up to an empty line, then the body. Lines end in LF with an optional CR before it.
struct RawRequest {
    let method: String
    let target: String
    let version: String
    let headers: HTTPHeaders
    let body: [UInt8]

    init?(_ data: UnsafeRawBufferPointer) {
        let bytes = Array(data)
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var bodyStart: Int?
        while let newline = bytes[start...].firstIndex(of: 0x0A) {
            var line = bytes[start..<newline]
            if line.last == 0x0D { line = line.dropLast() }
            start = newline + 1
            if line.isEmpty && !lines.isEmpty {
                bodyStart = start
                break
            }
            lines.append(line)
        }
        guard let bodyStart, let requestLine = lines.first,
            let text = String(validating: requestLine, as: UTF8.self)
        else { return nil }
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            // libmicrohttpd hands over C strings: a NUL ends a field, and it refuses a line without ':'.
            guard !line.contains(0), let colon = line.firstIndex(of: UInt8(ascii: ":")),
                let name = String(validating: line[line.startIndex..<colon], as: UTF8.self),
                let value = String(validating: line[(colon + 1)...], as: UTF8.self)
            else { return nil }
            headers.add(name, value.trimmingCharacters(in: CharacterSet(charactersIn: " \t")))
        }
        method = String(parts[0])
        target = String(parts[1])
        version = String(parts[2])
        self.headers = headers
        body = Array(bytes[bodyStart...])
    }
}

/// A player that never changes, so every input gets the same answer whatever ran before it.
final class StillPlayer: PlayerControlling {
    var status: PlayerStatusReport {
        PlayerStatusReport(
            state: "playing", position: 12.5, duration: 60, capture: "clear", captureSource: "fuzz",
            captureReason: "fuzz", protecting: false)
    }
    func pause() {}
    func resume() {}
    func seek(to seconds: Double) {}
    func reportCapture(capturing: Bool, seq: UInt64, lease: Double, observedAt: Date) -> PlayerReportOutcome {
        seq % 2 == 0 ? .accepted : .stale(lastSeq: seq / 2)
    }
    func subscribe(_ subscriber: @escaping @Sendable (_ event: String, _ payload: JSON) -> Bool) -> Int { 0 }
    func unsubscribe(_ id: Int) {}
}
