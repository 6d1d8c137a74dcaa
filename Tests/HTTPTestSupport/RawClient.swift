import Foundation

/// A blocking TCP client for tests that must send exactly the bytes they mean, malformed or slow.
public final class RawClient {
    let socket: Int32

    /// Connects to `host:port` (IPv4), from the loopback address `source` when one is given (any
    /// 127.x.y.z works on Linux), so a test can be a second client as a server counts them.
    public init(port: UInt16, host: String = "127.0.0.1", source: String? = nil) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw RawClientError("socket: \(String(cString: strerror(errno)))") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                throw RawClientError("bind(\(source)): \(String(cString: strerror(errno)))")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            throw RawClientError("connect(\(host):\(port)): \(String(cString: strerror(errno)))")
        }
    }

    /// Also runs when `init` throws, every property being set by then: the one place the socket is closed.
    deinit { if socket >= 0 { Glibc.close(socket) } }

    /// Sends every byte; false when the peer has closed.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Sends the text's UTF-8 bytes.
    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads until the peer closes, `timeout` seconds pass, or `done` is satisfied by what has arrived.
    public func read(timeout: Double = 5, until done: ([UInt8]) -> Bool = { _ in false }) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            guard poll(&poller, 1, remaining) > 0 else { break }
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
            if done(received) { break }
        }
        return received
    }

    /// Reads until the text read so far contains `marker`.
    public func read(untilText marker: String, timeout: Double = 5) -> String {
        String(decoding: read(timeout: timeout) { String(decoding: $0, as: UTF8.self).contains(marker) }, as: UTF8.self)
    }

    /// Reads one whole response with a Content-Length body (or whatever arrives before the peer closes).
    public func readResponse(timeout: Double = 5) -> RawResponse {
        RawResponse(read(timeout: timeout) { RawResponse($0).isComplete })
    }
}

/// A client-side failure.
public struct RawClientError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A response parsed from raw bytes.
public struct RawResponse {
    /// Everything received.
    public let bytes: [UInt8]
    /// The status code, or 0 when no status line arrived.
    public private(set) var status = 0
    /// The header fields.
    public private(set) var headers: [(String, String)] = []
    /// The body (cut to Content-Length when there is one).
    public private(set) var body: [UInt8] = []
    /// True when the whole Content-Length body arrived.
    public private(set) var isComplete = false

    /// Parses `bytes`.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        let marker: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let end = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == marker })
        else { return }
        let head = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        status = statusParts.count > 1 ? Int(statusParts[1]) ?? 0 : 0
        headers = head.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        body = Array(bytes[(end + 4)...])
        if let length = header("Content-Length").flatMap(Int.init) {
            isComplete = body.count >= length
            if isComplete { body = Array(body.prefix(length)) }
        }
    }

    /// The first value of header field `name`.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body as text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, when it is one.
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}

/// One request on a fresh connection: `method target` with `headers` and `body`, answered in full.
public func exchange(
    port: UInt16, _ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil,
    timeout: Double = 10
) throws -> RawResponse {
    let client = try RawClient(port: port)
    var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
    text += "\r\n" + (body ?? "")
    client.send(text)
    return RawResponse(client.read(timeout: timeout))
}

/// Reads Server-Sent Events from a raw connection, event by event.
public final class EventStreamReader {
    let client: RawClient
    private var bytes: [UInt8] = []
    /// How many bytes of `bytes` have been looked at.
    private var consumed = 0

    /// Opens `target` on `port` with `headers` and reads the response header.
    public init(port: UInt16, target: String, headers: [(String, String)] = []) throws {
        client = try RawClient(port: port)
        var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        client.send(request + "\r\n")
        bytes = Array(client.read(untilText: "\r\n\r\n", timeout: 10).utf8)
    }

    /// The response's status code.
    public var status: Int { RawResponse(bytes).status }

    /// Everything received so far, for failure messages.
    public var transcript: String { String(decoding: bytes, as: UTF8.self) }

    /// The data of the next event named `name` whose data contains `fragment`, skipping others;
    /// nil when none arrives within `timeout` seconds.
    public func next(_ name: String, containing fragment: String = "", timeout: Double = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        let marker = Array("event: \(name)\ndata: ".utf8)
        while true {
            if let start = find(marker, from: consumed),
                let end = bytes[(start + marker.count)...].firstIndex(of: UInt8(ascii: "\n"))
            {
                consumed = end
                let data = String(decoding: bytes[(start + marker.count)..<end], as: UTF8.self)
                if fragment.isEmpty || data.contains(fragment) { return data }
                continue
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            let more = client.read(timeout: remaining) { _ in true }
            if more.isEmpty { return nil }
            bytes += more
        }
    }

    /// One event as received: its name, its data line, and its `id:` when it carried one.
    public struct Event: Equatable, CustomStringConvertible {
        public let name: String
        public let data: String
        public let id: String?

        public var description: String { "\(id.map { "#\($0) " } ?? "")\(name) \(data)" }
    }

    /// The next whole event (of any name, comment lines skipped); nil when none is complete within
    /// `timeout` seconds.
    public func nextEvent(timeout: Double = 10) -> Event? {
        let deadline = Date().addingTimeInterval(timeout)
        let marker = Array("event: ".utf8)
        let blank = Array("\n\n".utf8)
        while true {
            if let start = find(marker, from: consumed), let end = find(blank, from: start) {
                consumed = end + blank.count
                var fields: [String: String] = [:]
                for line in String(decoding: bytes[start..<end], as: UTF8.self).split(separator: "\n") {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    fields[String(line[..<colon])] = String(line[line.index(colon, offsetBy: 2)...])
                }
                return Event(name: fields["event"] ?? "", data: fields["data"] ?? "", id: fields["id"])
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return nil }
            let more = client.read(timeout: remaining) { _ in true }
            if more.isEmpty { return nil }
            bytes += more
        }
    }

    /// Every whole event that arrives until none has for `quiet` seconds.
    public func events(quiet: Double) -> [Event] {
        var received: [Event] = []
        while let event = nextEvent(timeout: quiet) { received.append(event) }
        return received
    }

    /// True once the server has ended the stream with its last chunk.
    public func ended(timeout: Double = 10) -> Bool {
        let terminator = Array("0\r\n\r\n".utf8)
        if bytes.count >= terminator.count && Array(bytes.suffix(terminator.count)) == terminator { return true }
        bytes += client.read(timeout: timeout) { received in
            Array((bytes + received).suffix(terminator.count)) == terminator
        }
        return Array(bytes.suffix(terminator.count)) == terminator
    }

    private func find(_ pattern: [UInt8], from offset: Int) -> Int? {
        guard bytes.count >= pattern.count, offset <= bytes.count - pattern.count else { return nil }
        return (offset...(bytes.count - pattern.count)).first { Array(bytes[$0..<$0 + pattern.count]) == pattern }
    }
}
