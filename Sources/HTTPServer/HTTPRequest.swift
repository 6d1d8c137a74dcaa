/// One HTTP request as the server received it: the method, the target exactly as sent (still
/// percent-encoded, split at the first `?`), the header fields and the whole body.
public struct HTTPRequest: Sendable {
    /// The method token, such as `GET`.
    public var method: String
    /// The path part of the request target, as sent: never percent-decoded by the server.
    public var path: String
    /// The query part after the first `?`, as sent, or nil when there was none.
    public var query: String?
    /// The header fields in the order they were received.
    public var headers: HTTPHeaders
    /// The body, at most the server's body cap.
    public var body: [UInt8]
    /// The client's address as text (`127.0.0.1`), or empty when unknown: the peer's, or behind a
    /// trusted proxy the one its `X-Forwarded-For` names.
    public var remoteAddress: String
    /// The address of the socket's other end (a proxy, when there is one).
    public var peerAddress: String

    /// A request value; servers build these from the wire and tests build them by hand.
    public init(
        method: String, path: String, query: String? = nil, headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [], remoteAddress: String = "", peerAddress: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.peerAddress = peerAddress ?? remoteAddress
    }

    /// A request for `target` (a path with an optional `?query`), split as the server splits it.
    public init(
        method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        remoteAddress: String = ""
    ) {
        let (path, query) = splitTarget(target)
        self.init(method: method, path: path, query: query, headers: headers, body: body, remoteAddress: remoteAddress)
    }
}
