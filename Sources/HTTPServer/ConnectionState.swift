import FoundationEssentials
import Glibc
import Synchronization
import SystemSupport

/// What the server knows about one client connection, from `MHD_CONNECTION_NOTIFY_STARTED` to
/// `MHD_CONNECTION_NOTIFY_CLOSED`: its socket, its address, and where its current request stands, so
/// the watchdog can answer a client that sends its header or its body too slowly.
final class ConnectionState: Sendable {
    enum Phase: Equatable {
        /// Connected, no request line yet; `first` is false on a kept-alive connection between requests.
        case awaitingRequest(since: Double, first: Bool)
        /// The request line arrived; the header is still coming.
        case awaitingHeaders(since: Double)
        /// The header is complete and the server owns the request; its body (if any) is still coming.
        case receivingBody(since: Double)
        /// The body is complete and the application owns the request.
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

    /// Claims the request whose header is complete, unless the watchdog has already answered it, and
    /// starts the body deadline.
    func beginRequest(now: Double) -> Claim {
        state.withLock { state -> Claim in
            guard state.phase != .timedOut, state.phase != .closed else { return .refused }
            state.phase = .receivingBody(since: now)
            defer { state.target = nil }
            return .claimed(target: state.target)
        }
    }

    /// Hands the request to the application once its body is complete; false when the watchdog has
    /// already answered it (the body came too slowly), so no handler may run or respond.
    func bodyComplete() -> Bool {
        state.withLock { state -> Bool in
            switch state.phase {
            case .receivingBody:
                state.phase = .handling
                return true
            case .handling: return true
            default: return false
            }
        }
    }

    /// Returns the connection to waiting after a response.
    func requestCompleted(now: Double) {
        state.withLock { state in
            switch state.phase {
            case .handling, .receivingBody: state.phase = .awaitingRequest(since: now, first: false)
            default: break
            }
        }
    }

    /// True while a request on this connection is in flight: its body is arriving or the application
    /// owns it.
    var isHandling: Bool {
        state.withLock { state in
            if case .receivingBody = state.phase { return true }
            return state.phase == .handling
        }
    }

    /// Marks the socket gone; called before libmicrohttpd closes it.
    func closed() {
        state.withLock { $0.phase = .closed }
    }

    /// Which part of a request came too slowly.
    enum Stall: Equatable {
        /// The request line or header.
        case header
        /// The body, after a complete header.
        case body
    }

    /// When the client has held the header open past `headerDeadline` seconds, or the body past
    /// `bodyDeadline` seconds after the header, writes `response` for that stall to the socket and
    /// shuts it, so libmicrohttpd sees the end and closes the connection; returns the stall. The lock
    /// is held throughout, so the socket cannot be closed (and its number reused) underneath the write,
    /// and the application cannot start on the request.
    func timeOutIfStalled(
        now: Double, headerDeadline: Double, bodyDeadline: Double, response: (Stall) -> [UInt8]
    ) -> Stall? {
        state.withLock { state -> Stall? in
            let stall: Stall
            let overdue: Bool
            switch state.phase {
            case .awaitingRequest(let start, true), .awaitingHeaders(let start):
                (stall, overdue) = (.header, now - start >= headerDeadline)
            case .receivingBody(let start):
                (stall, overdue) = (.body, now - start >= bodyDeadline)
            default: return nil
            }
            guard overdue else { return nil }
            state.phase = .timedOut
            response(stall).withUnsafeBytes { bytes in
                _ = Glibc.send(socket, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
            return stall
        }
    }
}

/// Seconds on the monotonic clock, for deadlines.
func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
