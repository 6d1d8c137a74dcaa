/// A request the server refused before any handler saw it, and why.
public struct Rejection: Sendable, Equatable {
    /// Why a request was refused.
    public enum Reason: String, Sendable, CaseIterable {
        /// An HTTP/1.1 request without a `Host` field.
        case missingHost = "missing-host"
        /// More than one `Host` field: which host the request is for is ambiguous (RFC 9112 §3.2).
        case repeatedHost = "repeated-host"
        /// A header field name that is not an HTTP token.
        case invalidHeaderName = "invalid-header-name"
        /// Both `Transfer-Encoding` and `Content-Length`: the body's framing is ambiguous.
        case ambiguousFraming = "ambiguous-framing"
        /// A `Transfer-Encoding` other than a single `chunked`.
        case unsupportedTransferEncoding = "unsupported-transfer-encoding"
        /// A `Content-Length` that is repeated or not a decimal number.
        case invalidContentLength = "invalid-content-length"
        /// A body larger than the server's cap.
        case bodyTooLarge = "body-too-large"
        /// More header fields than the server allows.
        case tooManyHeaders = "too-many-headers"
        /// A request target longer than the server allows.
        case targetTooLong = "target-too-long"
        /// The client did not finish its request header in time.
        case headerTimeout = "header-timeout"
        /// The client did not finish its request body in time.
        case bodyTimeout = "body-timeout"
    }

    /// Why.
    public let reason: Reason
    /// The status code the refusal carries.
    public let status: Int
    /// One sentence for the client.
    public let detail: String

    /// A refusal with its status and explanation.
    public init(_ reason: Reason, status: Int, detail: String) {
        self.reason = reason
        self.status = status
        self.detail = detail
    }

    /// The default responder: the detail as plain text.
    public static let plainResponse: @Sendable (Rejection) -> HTTPResponse = { rejection in
        HTTPResponse(
            status: rejection.status, headers: HTTPHeaders([("Content-Type", "text/plain; charset=utf-8")]),
            body: .bytes(Array((rejection.detail + "\n").utf8)))
    }
}

extension HTTPServerConfiguration {
    /// The first rule a request breaks, or nil. `headers` are as received; the body has not been read.
    /// libmicrohttpd has parsed the request line and header by then; this is everything the server
    /// decides itself, so the fuzz targets call it without a socket.
    package func screen(version: String, target: String, headers: HTTPHeaders) -> Rejection? {
        if target.utf8.count > maxTargetLength {
            return Rejection(
                .targetTooLong, status: 414, detail: "The request target is longer than \(maxTargetLength) bytes.")
        }
        if headers.count > maxHeaderCount {
            return Rejection(
                .tooManyHeaders, status: 431, detail: "The request has more than \(maxHeaderCount) header fields.")
        }
        if let bad = headers.first(where: { !isToken($0.name) }) {
            return Rejection(
                .invalidHeaderName, status: 400,
                detail: "The header field name '\(printable(bad.name))' is not a valid token.")
        }
        if version == "HTTP/1.1" && !headers.contains("Host") {
            return Rejection(.missingHost, status: 400, detail: "An HTTP/1.1 request must carry a Host field.")
        }
        if headers.values("Host").count > 1 {
            return Rejection(.repeatedHost, status: 400, detail: "The request carries more than one Host field.")
        }
        let encodings = headers.values("Transfer-Encoding")
        let lengths = headers.values("Content-Length")
        if !encodings.isEmpty && !lengths.isEmpty {
            return Rejection(
                .ambiguousFraming, status: 400,
                detail: "The request carries both Transfer-Encoding and Content-Length.")
        }
        if !encodings.isEmpty {
            let trimmed = encodings.map { $0.trimmingASCIISpaces() }
            if trimmed.count != 1 || !trimmed[0].caseInsensitiveEquals("chunked") {
                return Rejection(
                    .unsupportedTransferEncoding, status: 400,
                    detail: "Only a single Transfer-Encoding: chunked is accepted.")
            }
        }
        if !lengths.isEmpty {
            let text = lengths[0].trimmingASCIISpaces()
            guard lengths.count == 1, !text.isEmpty, text.utf8.count <= 18,
                text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                let length = Int(text)
            else {
                return Rejection(
                    .invalidContentLength, status: 400, detail: "Content-Length must appear once, as a decimal number.")
            }
            if length > maxBodyBytes {
                return bodyTooLarge
            }
        }
        return nil
    }

    /// The refusal for a body over the cap.
    package var bodyTooLarge: Rejection {
        Rejection(.bodyTooLarge, status: 413, detail: "The request body is larger than \(maxBodyBytes) bytes.")
    }
}

/// True when `name` is an HTTP token (RFC 9110 §5.6.2).
func isToken(_ name: String) -> Bool {
    guard !name.isEmpty else { return false }
    return name.utf8.allSatisfy { byte in
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}

/// `text` with anything but printable ASCII replaced by `?`, cut to 64 characters, for messages.
func printable(_ text: String) -> String {
    String(decoding: text.utf8.prefix(64).map { ($0 >= 0x20 && $0 < 0x7F) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    func trimmingASCIISpaces() -> String {
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
        while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09) { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
