import Foundation
import Synchronization

/// What the server knows about one client connection, from `MHD_CONNECTION_NOTIFY_STARTED` to
/// `MHD_CONNECTION_NOTIFY_CLOSED`: its socket, its address, and where its current request stands, so
/// the watchdog can answer a client that sends its header too slowly.
final class ConnectionState: Sendable {
    enum Phase: Equatable {
        /// Connected, no request line yet; `first` is false on a kept-alive connection between requests.
        case awaitingRequest(since: Double, first: Bool)
        /// The request line arrived; the header is still coming.
        case awaitingHeaders(since: Double)
        /// The header is complete and the application owns the request.
        case handling
        /// The watchdog answered 408 and shut the socket.
        case timedOut
        /// libmicrohttpd closed the connection; the socket number may already belong to someone else.
        case closed
    }

    struct State {
        var phase: Phase
        /// The request target exactly as sent, recorded when the request line arrives.
        var target: String?
    }

    /// The socket; valid until `phase` becomes `.closed` (libmicrohttpd notifies before closing it).
    let socket: Int32
    let remoteAddress: String
    let state: Mutex<State>

    init(socket: Int32, remoteAddress: String, now: Double) {
        self.socket = socket
        self.remoteAddress = remoteAddress
        state = Mutex(State(phase: .awaitingRequest(since: now, first: true)))
    }

    /// Records the request line's target and starts the header deadline.
    func requestLineArrived(_ target: String, now: Double) {
        state.withLock { state in
            guard state.phase != .timedOut, state.phase != .closed else { return }
            state.phase = .awaitingHeaders(since: now)
            state.target = target
        }
    }

    /// The outcome of claiming a request whose header is complete.
    enum Claim {
        /// The application owns the request; `target` is the raw target from the request line.
        case claimed(target: String?)
        /// The watchdog already answered this connection.
        case refused
    }

    /// Claims the request for the application, unless the watchdog has already answered it.
    func beginRequest() -> Claim {
        state.withLock { state -> Claim in
            guard state.phase != .timedOut, state.phase != .closed else { return .refused }
            state.phase = .handling
            defer { state.target = nil }
            return .claimed(target: state.target)
        }
    }

    /// Returns the connection to waiting after a response.
    func requestCompleted(now: Double) {
        state.withLock { state in
            if state.phase == .handling { state.phase = .awaitingRequest(since: now, first: false) }
        }
    }

    /// True while the application owns a request on this connection.
    var isHandling: Bool { state.withLock { $0.phase == .handling } }

    /// Marks the socket gone; called before libmicrohttpd closes it.
    func closed() {
        state.withLock { $0.phase = .closed }
    }

    /// When the client has held the header open past `deadline` seconds, writes `response` to the
    /// socket and shuts it, so libmicrohttpd sees the end and closes the connection. The lock is held
    /// throughout, so the socket cannot be closed (and its number reused) underneath the write, and
    /// the application cannot start on the request.
    func timeOutIfStalled(now: Double, deadline: Double, response: () -> [UInt8]) -> Bool {
        state.withLock { state -> Bool in
            let since: Double
            switch state.phase {
            case .awaitingRequest(let start, true): since = start
            case .awaitingHeaders(let start): since = start
            default: return false
            }
            guard now - since >= deadline else { return false }
            state.phase = .timedOut
            response().withUnsafeBytes { bytes in
                _ = Glibc.send(socket, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
            return true
        }
    }
}

/// Seconds on the monotonic clock, for deadlines.
func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
