import Foundation

/// A blocking TCP client for tests that must send exactly the bytes they mean, malformed or slow.
final class RawClient {
    let socket: Int32

    init(port: UInt16, host: String = "127.0.0.1") throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw RawClientError("socket: \(String(cString: strerror(errno)))") }
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
            Glibc.close(socket)
            throw RawClientError("connect: \(String(cString: strerror(errno)))")
        }
    }

    deinit { Glibc.close(socket) }

    /// Sends every byte; false when the peer has closed.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
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

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads until the peer closes or `timeout` seconds pass without data, or `until` is satisfied.
    func read(timeout: Double = 5, until done: ([UInt8]) -> Bool = { _ in false }) -> [UInt8] {
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

    /// Reads one whole response with a Content-Length body.
    func readResponse(timeout: Double = 5) -> RawResponse {
        RawResponse(read(timeout: timeout) { RawResponse($0).isComplete })
    }
}

struct RawClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A response parsed from raw bytes.
struct RawResponse {
    let bytes: [UInt8]
    var status: Int = 0
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    var isComplete = false

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        let marker: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { Array(bytes[$0..<min($0 + 4, bytes.count)]) == marker })
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

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}
