/// A response a handler returns: a status, header fields and a body. The server adds `Date` and
/// `Content-Length` (or chunked framing for streams) itself.
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields to send; never `Content-Length` or `Transfer-Encoding`.
    public var headers: HTTPHeaders
    /// What follows the header.
    public var body: HTTPBody

    /// A response with the given parts.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: HTTPBody = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The byte count the body will have on the wire, or nil for a stream.
    public var bodyLength: UInt64? {
        switch body {
        case .bytes(let bytes): UInt64(bytes.count)
        case .file(let region): region.length
        case .stream: nil
        }
    }
}

/// A response body.
public enum HTTPBody: Sendable {
    /// Bytes held in memory.
    case bytes([UInt8])
    /// A byte range of a file the server opens and sends with `sendfile`.
    case file(FileRegion)
    /// A Server-Sent Events stream that stays open until either side ends it.
    case stream(EventStream)
}

/// A byte range of a file on disk. The path comes from the application's own registry, never from
/// request text.
public struct FileRegion: Sendable, Equatable {
    /// The file's absolute path.
    public let path: String
    /// The first byte to send.
    public let offset: UInt64
    /// How many bytes to send.
    public let length: UInt64

    /// A range of `length` bytes at `offset` in the file at `path`.
    public init(path: String, offset: UInt64, length: UInt64) {
        self.path = path
        self.offset = offset
        self.length = length
    }
}

/// The standard reason phrase for a status code, for logs and raw responses.
public func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 200: "OK"
    case 201: "Created"
    case 202: "Accepted"
    case 204: "No Content"
    case 206: "Partial Content"
    case 304: "Not Modified"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 413: "Content Too Large"
    case 414: "URI Too Long"
    case 415: "Unsupported Media Type"
    case 416: "Range Not Satisfiable"
    case 422: "Unprocessable Content"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 503: "Service Unavailable"
    default: "Status \(status)"
    }
}
