internal import CMicroHTTPD
import FoundationEssentials
import Synchronization
import SystemSupport

/// An HTTP/1.1 server on libmicrohttpd 0.9.75: an internal epoll polling thread per worker of a
/// thread pool, explicit limits, and request hygiene checks that run before any handler sees a
/// request.
///
/// Lifecycle: `init` → `start()` (binds and starts the daemon) → `stop(grace:)` (stops accepting,
/// ends event streams, waits for connections to finish, stops the daemon). Handlers run on the
/// daemon's own pool threads, never on Swift's cooperative pool, and must not block for long.
public final class HTTPServer: Sendable {
    /// The function that answers every request that passes the server's own checks.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse
    /// The function that turns a request the server refused into a response body the application
    /// chooses (problem+json, say).
    public typealias RejectionResponder = @Sendable (Rejection) -> HTTPResponse

    let configuration: HTTPServerConfiguration
    let handler: Handler
    let rejectionResponder: RejectionResponder
    let watchdog: ConnectionWatchdog

    /// The daemon pointer.
    ///
    /// `@unchecked Sendable`: the daemon is only passed to libmicrohttpd calls that are safe from any
    /// thread (MHD_get_daemon_info) and to MHD_stop_daemon, which `stop` calls once.
    struct DaemonHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    struct State {
        var daemon: DaemonHandle?
        var port: UInt16 = 0
        var stopped = false
    }

    let state = Mutex(State())
    /// Streams a client is reading now, so a stop can end them and the heartbeat can reach them.
    let streams = Mutex([ObjectIdentifier: EventStream]())

    /// A server that answers with `handler`, and with `rejectionResponder` for requests its own checks
    /// refuse.
    public init(
        configuration: HTTPServerConfiguration, rejectionResponder: RejectionResponder? = nil,
        handler: @escaping Handler
    ) {
        self.configuration = configuration
        self.handler = handler
        self.rejectionResponder = rejectionResponder ?? Rejection.plainResponse
        watchdog = ConnectionWatchdog(configuration: configuration)
    }

    /// True once `stop` has begun.
    var isStopping: Bool { state.withLock { $0.stopped } }

    /// The port the server listens on (the bound one when the configuration asked for port 0).
    public var port: UInt16 { state.withLock { $0.port } }

    /// Connections open now, as libmicrohttpd counts them.
    public var openConnections: Int {
        state.withLock { state in state.daemon.map { Int(cmhd_daemon_connections($0.pointer)) } ?? 0 }
    }

    /// Binds the listening socket and starts the daemon's threads.
    public func start() throws(HTTPServerError) {
        let address = try SocketAddress(host: configuration.host, port: configuration.port)
        // Retained for the daemon's lifetime: every callback reaches the server through this pointer,
        // and `stop` releases it after MHD_stop_daemon has returned, when no callback can run.
        let context = Unmanaged.passRetained(self).toOpaque()
        var flags =
            cmhd_use_epoll_internal_thread() | cmhd_use_suspend_resume() | cmhd_use_error_log() | cmhd_use_turbo()
        if address.isIPv6 { flags |= UInt32(MHD_USE_IPv6.rawValue) }
        let daemon: OpaquePointer? = address.withSockaddr { sockaddr in
            // The logger goes first, so the daemon's messages about the options below reach it too.
            var options: [MHD_OptionItem] = [
                cmhd_option_logger(daemonLogged, context),
                cmhd_option_value(.THREAD_POOL_SIZE, max(1, configuration.threads)),
                cmhd_option_value(.CONNECTION_LIMIT, configuration.connectionLimit),
                cmhd_option_value(.CONNECTION_TIMEOUT, configuration.idleTimeoutSeconds),
                cmhd_option_value(.CONNECTION_MEMORY_LIMIT, configuration.connectionMemoryLimit),
                cmhd_option_value(.LISTEN_BACKLOG_SIZE, 1024),
                cmhd_option_pointer(.SOCK_ADDR, UnsafeMutableRawPointer(mutating: sockaddr)),
                cmhd_option_unescape(keepTargetEscaped, nil),
                cmhd_option_uri_log(requestLineArrived, context),
                cmhd_option_notify_connection(connectionChanged, context),
                cmhd_option_notify_completed(requestCompleted, context),
            ]
            if configuration.perClientConnectionLimit > 0 {
                options.append(
                    cmhd_option_value(.PER_IP_CONNECTION_LIMIT, configuration.perClientConnectionLimit))
            }
            options.append(cmhd_option_end())
            return options.withUnsafeMutableBufferPointer { items in
                // The port is in SOCK_ADDR; given here too, the daemon's own messages name it.
                cmhd_start_daemon(flags, configuration.port, nil, nil, handleRequest, context, items.baseAddress)
            }
        }
        guard let daemon else {
            Unmanaged<HTTPServer>.fromOpaque(context).release()
            let host = configuration.host
            let endpoint = (host.contains(":") ? "[\(host)]" : host) + ":\(configuration.port)"
            if let failure = address.bindFailure() {
                throw HTTPServerError(operation: "bind(\(endpoint))", message: failure)
            }
            throw HTTPServerError(
                operation: "MHD_start_daemon(\(endpoint))", message: "could not start (the address can be bound)")
        }
        let handle = DaemonHandle(pointer: daemon)
        state.withLock { state in
            state.daemon = handle
            state.port = cmhd_daemon_port(handle.pointer)
        }
        watchdog.start(server: self)
    }

    /// Ends every event stream, waits up to `grace` seconds for requests in flight to finish (answering
    /// them, and any that arrive meanwhile, with `Connection: close`), then stops the daemon. Safe to
    /// call more than once.
    ///
    /// The listening socket stays open until MHD_stop_daemon: libmicrohttpd 0.9.75's
    /// MHD_quiesce_daemon races its own epoll threads for the listening socket and aborts the
    /// process ("Failed to remove listen FD from epoll set") when a thread wins.
    public func stop(grace: Double = 5) {
        let handle: DaemonHandle? = state.withLock { state in
            guard !state.stopped, let daemon = state.daemon else { return nil }
            state.stopped = true
            return daemon
        }
        guard let daemon = handle?.pointer else { return }
        finishStreams()
        // Idle kept-alive connections are not waited for: MHD_stop_daemon closes them.
        let deadline = monotonicSeconds() + grace
        while monotonicSeconds() < deadline {
            if !watchdog.hasRequestsInFlight && streams.withLock({ $0.isEmpty }) { break }
            usleep(20_000)
        }
        // MHD_stop_daemon must not meet a suspended connection: end (and so resume) any stream that
        // started while we waited.
        finishStreams()
        while !streams.withLock({ $0.isEmpty }) && monotonicSeconds() < deadline + 1 { usleep(10_000) }
        watchdog.stop()
        MHD_stop_daemon(daemon)
        state.withLock { $0.daemon = nil }
        // Balances the retain taken in `start`.
        Unmanaged.passUnretained(self).release()
    }

    private func finishStreams() {
        for stream in streams.withLock({ Array($0.values) }) { stream.finish() }
    }

    /// Sends an SSE comment to every open stream, so clients that went away while their connection
    /// was suspended are found and closed.
    func heartbeat() {
        let comment = Array(": keep-alive\n\n".utf8)
        for stream in streams.withLock({ Array($0.values) }) { stream.send(comment) }
    }

    func register(_ stream: EventStream) {
        streams.withLock { $0[ObjectIdentifier(stream)] = stream }
    }

    func unregister(_ stream: EventStream) {
        _ = streams.withLock { $0.removeValue(forKey: ObjectIdentifier(stream)) }
    }
}

/// A failure to start the server: the call that failed and why.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// The call or step that failed.
    public let operation: String
    /// What went wrong.
    public let message: String

    public var description: String { "\(operation): \(message)" }
}
