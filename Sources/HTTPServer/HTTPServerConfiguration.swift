/// The server's address and limits. Every limit is explicit; the defaults suit a gateway behind nginx.
public struct HTTPServerConfiguration: Sendable {
    /// The IP address to listen on (`127.0.0.1`, `::1`, `0.0.0.0`); `localhost` means `127.0.0.1`.
    public var host: String
    /// The port; 0 picks a free one (read it back from `HTTPServer.port`).
    public var port: UInt16
    /// Worker threads, each with its own epoll loop.
    public var threads: Int
    /// Open connections at most; libmicrohttpd refuses more.
    public var connectionLimit: Int
    /// Open connections per client IP address at most, so one client cannot hold every connection;
    /// 0 for no per-client limit (behind a proxy every client has the proxy's address). libmicrohttpd
    /// closes a connection over the limit as soon as it is accepted.
    public var perClientConnectionLimit: Int
    /// Seconds a connection may sit idle (no bytes either way) before it is closed.
    public var idleTimeoutSeconds: Int
    /// Seconds a client may take to send a complete request header, counted from its connection (for
    /// the first request) or its request line; a slower client gets 408.
    public var headerTimeout: Double
    /// Seconds a client may take to send a request's whole body, counted from the end of its header;
    /// a slower client gets 408, so a body trickled byte by byte cannot hold a connection for long.
    public var bodyTimeout: Double
    /// Bytes of memory each connection may use for its header and buffers; a larger request line
    /// gets 414 and a larger header 431 from libmicrohttpd.
    public var connectionMemoryLimit: Int
    /// The largest request body accepted; a larger one gets 413.
    public var maxBodyBytes: Int
    /// The most header fields a request may carry; more get 431.
    public var maxHeaderCount: Int
    /// The longest request target accepted; a longer one gets 414.
    public var maxTargetLength: Int
    /// Seconds between keep-alive comments on event streams.
    public var heartbeatInterval: Double
    /// Where the daemon's own diagnostics go.
    public var log: @Sendable (String) -> Void
    /// Proxies whose `X-Forwarded-For` names the client (`HTTPRequest.remoteAddress`); none by default.
    public var trustedProxies = TrustedProxies()

    /// A configuration with the given address and the default limits.
    public init(
        host: String = "127.0.0.1", port: UInt16 = 8080, threads: Int = 4, connectionLimit: Int = 1024,
        perClientConnectionLimit: Int = 128, idleTimeoutSeconds: Int = 30, headerTimeout: Double = 10,
        bodyTimeout: Double = 30, connectionMemoryLimit: Int = 16 * 1024, maxBodyBytes: Int = 64 * 1024,
        maxHeaderCount: Int = 64, maxTargetLength: Int = 4096, heartbeatInterval: Double = 15,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.connectionLimit = connectionLimit
        self.perClientConnectionLimit = perClientConnectionLimit
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.connectionMemoryLimit = connectionMemoryLimit
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxTargetLength = maxTargetLength
        self.heartbeatInterval = heartbeatInterval
        self.log = log
    }
}
