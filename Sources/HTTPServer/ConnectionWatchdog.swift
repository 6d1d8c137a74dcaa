import FoundationEssentials
import Synchronization
import SystemSupport
import ThreadSupport

/// A thread the server owns that, twice a second, answers 408 to connections that hold their request
/// header or body open too long (slowloris clients, and clients that trickle a body), and now and then
/// sends a heartbeat on event streams.
final class ConnectionWatchdog: Sendable {
    let configuration: HTTPServerConfiguration
    let connections = Mutex([ObjectIdentifier: ConnectionState]())
    private let ticker = PeriodicThread(name: "http-watchdog", interval: 0.5)
    private let lastHeartbeat = Mutex(0.0)

    init(configuration: HTTPServerConfiguration) {
        self.configuration = configuration
    }

    func add(_ connection: ConnectionState) {
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
    }

    func remove(_ connection: ConnectionState) {
        _ = connections.withLock { $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// True while some connection's request is with the application.
    var hasRequestsInFlight: Bool {
        connections.withLock { $0.values.contains { $0.isHandling } }
    }

    func start(server: HTTPServer) {
        // Built when a client times out (rarely), so the responder sees, and counts, each refusal.
        let timeoutResponse: @Sendable (ConnectionState.Stall) -> [UInt8] = { stall in
            let rejection =
                switch stall {
                case .header:
                    Rejection(.headerTimeout, status: 408, detail: "The request header did not arrive in time.")
                case .body:
                    Rejection(.bodyTimeout, status: 408, detail: "The request body did not arrive in time.")
                }
            return rawResponse(server.rejectionResponder(rejection))
        }
        lastHeartbeat.withLock { $0 = monotonicSeconds() }
        ticker.start(firstTickAfter: ticker.interval) { [self] in
            let now = monotonicSeconds()
            for connection in connections.withLock({ Array($0.values) }) {
                _ = connection.timeOutIfStalled(
                    now: now, headerDeadline: configuration.headerTimeout, bodyDeadline: configuration.bodyTimeout,
                    response: timeoutResponse)
            }
            let due = lastHeartbeat.withLock { last in
                guard now - last >= configuration.heartbeatInterval else { return false }
                last = now
                return true
            }
            if due { server.heartbeat() }
        }
    }

    func stop() { ticker.stop() }
}

/// `response` serialised for a direct write to a socket, closing the connection afterwards.
func rawResponse(_ response: HTTPResponse) -> [UInt8] {
    let body: [UInt8]
    if case .bytes(let bytes) = response.body { body = bytes } else { body = [] }
    var text = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
    for field in response.headers { text += "\(field.name): \(field.value)\r\n" }
    text += "Connection: close\r\nContent-Length: \(body.count)\r\n\r\n"
    return Array(text.utf8) + body
}
