import Dispatch
import FoundationEssentials
public import Gateway
public import HTTPServer
import SystemSupport

/// One segment of a route's path grammar.
public enum PathSegment: Sendable, Equatable {
    /// Exactly this text.
    case literal(String)
    /// An ID, `[A-Za-z0-9_-]{1,64}`, bound to the name.
    case id(String)
    /// A file name, `[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}`, bound to the name.
    case file(String)
}

/// Who may call a route.
public enum Access: Sendable, Equatable {
    /// Anyone (ops endpoints, the OpenAPI document, keys and media, which check their own tokens).
    case open
    /// An API token with this scope (or `admin`).
    case scope(Scope)
    /// An API token with this scope, or the session token of the session named by the `id` parameter.
    case scopeOrSessionToken(Scope)
}

/// A route: a method, a path grammar, who may call it, and the handler. Routes are plain values; the
/// router matches them in order.
public struct Route: Sendable {
    /// The handler's signature.
    public typealias Handler = @Sendable (RequestContext) throws -> HTTPResponse

    /// The method (`GET` routes also answer `HEAD`).
    public let method: String
    /// The path grammar.
    public let segments: [PathSegment]
    /// The pattern as text, such as `/v1/sessions/{id}`: the route's name in metrics and OpenAPI.
    public let pattern: String
    /// Who may call it.
    public let access: Access
    /// What it does.
    public let handler: Handler

    /// A route for `method` on `pattern`, where `{name}` is an ID and `{name:file}` a file name.
    public init(_ method: String, _ pattern: String, access: Access, handler: @escaping Handler) {
        self.method = method
        self.pattern = pattern
        self.access = access
        self.handler = handler
        segments = pattern.split(separator: "/").map { part in
            guard part.hasPrefix("{"), part.hasSuffix("}") else { return .literal(String(part)) }
            let inner = part.dropFirst().dropLast()
            if inner.hasSuffix(":file") { return .file(String(inner.dropLast(5))) }
            return .id(String(inner))
        }
    }

    /// The parameters when `parts` match this route's grammar, or nil.
    func match(_ parts: [Substring]) -> [String: String]? {
        guard parts.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (part, segment) in zip(parts, segments) {
            switch segment {
            case .literal(let text): guard part == text else { return nil }
            case .id(let name):
                guard Identifier.isValid(part) else { return nil }
                parameters[name] = String(part)
            case .file(let name):
                guard isFileName(part) else { return nil }
                parameters[name] = String(part)
            }
        }
        return parameters
    }
}

/// A file name in a media path: `[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}`, so never `.` or `..`.
func isFileName(_ text: Substring) -> Bool {
    let bytes = text.utf8
    guard let first = bytes.first, bytes.count <= 128, Identifier.isIDByte(first) else { return false }
    return bytes.allSatisfy { Identifier.isIDByte($0) || $0 == UInt8(ascii: ".") }
}

/// What a handler gets: the request, its path parameters, its query (decoded strictly) and the scopes
/// its API token granted.
public struct RequestContext: Sendable {
    /// The request as received.
    public let request: HTTPRequest
    /// Path parameters by name.
    public let parameters: [String: String]
    /// Query parameters, percent-decoded.
    public let query: [String: String]
    /// The scopes the caller's API token grants (empty for session-token and open access).
    public let scopes: Set<Scope>

    /// A path parameter the route's grammar guarantees.
    public func parameter(_ name: String) -> String { parameters[name] ?? "" }

    /// The body as a JSON object; 415 for a non-JSON content type, 400 for malformed JSON.
    public func jsonObject() throws -> JSONObject {
        if let type = request.headers["Content-Type"] {
            let media = type.split(separator: ";").first.map { $0.trimmingSpaces().lowercased() }
            // curl's -d sends form-urlencoded; its body is still ours to read as JSON.
            guard media == "application/json" || media == "application/x-www-form-urlencoded" else {
                throw APIProblem(
                    415, "unsupported-media-type", "Unsupported media type", "Send the body as application/json.")
            }
        }
        let value: JSON
        do { value = try JSON.parse(request.body) } catch {
            throw APIProblem.badRequest("invalid-json", "The body is not valid JSON: \(error).")
        }
        guard case .object(let members) = value else {
            throw APIProblem.badRequest("invalid-json", "The body must be a JSON object.")
        }
        return JSONObject(members: members)
    }
}

/// How the router treats cross-origin requests, authentication and draining.
public struct RouterOptions: Sendable {
    /// Origins allowed to read `/v1` responses from a browser; `*` allows any (never with credentials).
    public var corsOrigins: [String]
    /// Checks an API bearer token.
    public var authenticate: @Sendable (String?) -> Result<Set<Scope>, APITokenRefusal>
    /// Checks a session token for a session.
    public var sessionToken: @Sendable (String?, String) -> Bool
    /// Where internal errors are logged.
    public var log: @Sendable (String) -> Void

    /// Options with the given checks.
    public init(
        corsOrigins: [String] = [],
        authenticate: @escaping @Sendable (String?) -> Result<Set<Scope>, APITokenRefusal>,
        sessionToken: @escaping @Sendable (String?, String) -> Bool = { _, _ in false },
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.corsOrigins = corsOrigins
        self.authenticate = authenticate
        self.sessionToken = sessionToken
        self.log = log
    }
}

/// Matches requests to routes and answers them: strict path and query grammar, authentication,
/// CORS, problem+json for every error, and request metrics. Testable without a socket.
public final class Router: Sendable {
    /// The routes, in match order.
    public let routes: [Route]
    let options: RouterOptions
    /// Request metrics, with each route's label text made once.
    let metrics: RequestMetrics?

    struct RequestMetrics: Sendable {
        let requests: Metrics.Family
        let duration: Metrics.Family
        let rejections: Metrics.Family
        /// Per route: `route="…",method="…",status="` for the counter and `route="…"` for the histogram.
        let labels: [(counter: String, histogram: String)]
        let unmatched = (counter: "route=\"unmatched\",method=\"other\",status=\"", histogram: "route=\"unmatched\"")
    }

    /// A router over `routes`.
    public init(routes: [Route], options: RouterOptions, metrics: Metrics? = nil) {
        self.routes = routes
        self.options = options
        self.metrics = metrics.map { metrics in
            RequestMetrics(
                requests: metrics.family(
                    "guardplay_http_requests_total", .counter, help: "HTTP requests by route, method and status."),
                duration: metrics.family(
                    "guardplay_http_request_duration_seconds", .histogram, help: "Time to build a response, by route."),
                rejections: metrics.family(
                    "guardplay_http_rejections_total", .counter, help: "Requests the server refused before routing."),
                labels: routes.map { route in
                    (
                        Metrics.labelText(["route": route.pattern, "method": route.method]) + ",status=\"",
                        Metrics.labelText(["route": route.pattern])
                    )
                })
        }
    }

    /// The response to `request`.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        let start = DispatchTime.now().uptimeNanoseconds
        let (index, response, answered) = dispatch(request)
        var final = response
        if request.path.hasPrefix("/v1/") { applyCORS(request, to: &final) }
        if let metrics {
            var labels = index.map { metrics.labels[$0] } ?? metrics.unmatched
            // A 405 or a preflight was not the route's method: count it under the request's own.
            if let index, !answered {
                labels.counter =
                    Metrics.labelText(["route": routes[index].pattern, "method": Self.methodLabel(request.method)])
                    + ",status=\""
            }
            metrics.requests.increment(labelText: labels.counter + String(final.status) + "\"")
            metrics.duration.observe(
                labelText: labels.histogram, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return final
    }

    /// The response to a request the server itself refused.
    public func respond(to rejection: Rejection) -> HTTPResponse {
        metrics?.rejections.increment(labelText: Metrics.labelText(["reason": rejection.reason.rawValue]))
        return rejection.problem.response()
    }

    /// A request method as a metrics label: the methods HTTP defines, and `other` for the rest, so a
    /// client cannot make new series.
    static func methodLabel(_ method: String) -> String {
        ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"].contains(method)
            ? method : "other"
    }

    /// The index of the route whose path matched (nil when none did), the response, and whether that
    /// route's handler answered (false for a 405 and a preflight, which no handler sees).
    private func dispatch(_ request: HTTPRequest) -> (Int?, HTTPResponse, Bool) {
        let parts: [Substring]
        let query: [String: String]
        do {
            parts = try Self.pathSegments(request.path)
            query = try Self.queryParameters(request.query)
        } catch {
            return (nil, Self.response(for: error, log: options.log), true)
        }
        let method = request.method == "HEAD" ? "GET" : request.method
        var firstMatch: Int?
        for (index, route) in routes.enumerated() {
            guard let parameters = route.match(parts) else { continue }
            if firstMatch == nil { firstMatch = index }
            guard route.method == method, request.method != "OPTIONS" else { continue }
            do {
                let scopes = try authorize(route, request: request, parameters: parameters, query: query)
                let context = RequestContext(request: request, parameters: parameters, query: query, scopes: scopes)
                return (index, try route.handler(context), true)
            } catch {
                return (index, Self.response(for: error, log: options.log), true)
            }
        }
        guard let firstMatch else {
            return (nil, APIProblem.notFound("No route matches \(printable(request.path)).").problem.response(), true)
        }
        // The path exists but not for this method: the methods it does allow.
        let methods = Set(routes.filter { $0.match(parts) != nil }.map(\.method))
        let allowHeader = methods.union(methods.contains("GET") ? ["HEAD", "OPTIONS"] : ["OPTIONS"]).sorted()
            .joined(separator: ", ")
        if request.method == "OPTIONS" {
            return (firstMatch, preflight(request, allow: allowHeader), false)
        }
        let problem = Problem(
            code: "method-not-allowed", title: "Method not allowed", status: 405,
            detail: "\(printable(request.method)) is not allowed here; use \(allowHeader).")
        return (firstMatch, problem.response(headers: HTTPHeaders([("Allow", allowHeader)])), false)
    }

    private func authorize(
        _ route: Route, request: HTTPRequest, parameters: [String: String], query: [String: String]
    ) throws -> Set<Scope> {
        let needed: Scope
        switch route.access {
        case .open: return []
        case .scope(let scope): needed = scope
        case .scopeOrSessionToken(let scope):
            let bearer = Self.bearer(request.headers)
            if let id = parameters["id"], options.sessionToken(query["token"] ?? bearer, id) { return [] }
            needed = scope
        }
        switch options.authenticate(Self.bearer(request.headers)) {
        case .failure(let refusal): throw refusal
        case .success(let scopes):
            guard APITokens.allows(scopes, needed) else { throw APITokenRefusal.insufficientScope }
            return scopes
        }
    }

    static func bearer(_ headers: HTTPHeaders) -> String? {
        guard let value = headers["Authorization"] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingSpaces()
    }

    /// The problem response for `error`, with its `WWW-Authenticate` challenge when it has one (401s).
    static func response(for error: any Error, log: @Sendable (String) -> Void) -> HTTPResponse {
        var headers = HTTPHeaders()
        if let challenge = (error as? any ProblemConvertible)?.challenge {
            headers.add("WWW-Authenticate", challenge)
        }
        return problem(for: error, log: log).response(headers: headers)
    }

    static func problem(for error: any Error, log: @Sendable (String) -> Void) -> Problem {
        if let convertible = error as? any ProblemConvertible { return convertible.problem }
        log("internal error: \(error)")
        return Problem(
            code: "internal-error", title: "Internal server error", status: 500,
            detail: "The gateway failed to answer; the error is in its log.")
    }

    // MARK: Grammar

    /// The path's segments: only unreserved characters, no empty, `.` or `..` segment, no escapes.
    static func pathSegments(_ path: String) throws -> [Substring] {
        guard path.hasPrefix("/") else { throw APIProblem.badRequest("invalid-path", "The path must start with '/'.") }
        let valid = path.utf8.allSatisfy { byte in
            Identifier.isIDByte(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "~")
                || byte == UInt8(ascii: "/")
        }
        guard valid else {
            throw APIProblem.badRequest(
                "invalid-path", "The path may contain only letters, digits and '-', '_', '.', '~' and '/'.")
        }
        // Split on the byte: Character splitting is far slower, and the bytes are all ASCII here.
        let parts = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
            .map { Substring($0) }
        if parts.count == 1 && parts.first == "" { return [] }
        guard !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw APIProblem.badRequest("invalid-path", "The path may not contain empty, '.' or '..' segments.")
        }
        return parts
    }

    /// The query's parameters, percent-decoded (`+` is a space); a repeated name, a bad escape, `%00`
    /// or text that is not UTF-8 is a 400. Works on bytes: this runs on every key request.
    static func queryParameters(_ query: String?) throws -> [String: String] {
        guard let query, !query.isEmpty else { return [:] }
        var parameters: [String: String] = [:]
        let bytes = query.utf8
        var pairs = 0
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            if start < end {
                pairs += 1
                guard pairs <= 32 else {
                    throw APIProblem.badRequest("invalid-query", "The query has more than 32 parameters.")
                }
                let pair = bytes[start..<end]
                let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? end
                let value = equals < end ? pair[pair.index(after: equals)...] : pair[end...]
                guard let name = percentDecode(pair[..<equals]), let decoded = percentDecode(value) else {
                    throw APIProblem.badRequest(
                        "invalid-query", "The query has a malformed escape, a NUL byte or text that is not UTF-8.")
                }
                guard parameters[name] == nil else {
                    throw APIProblem.badRequest(
                        "invalid-query", "The query parameter '\(printable(name))' is repeated.")
                }
                parameters[name] = decoded
            }
            start = end < bytes.endIndex ? bytes.index(after: end) : end
        }
        return parameters
    }

    static func percentDecode(_ text: Substring.UTF8View) -> String? {
        // Most parameters have no escape: take them as they are.
        if !text.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") || $0 == 0 }) {
            return String(Substring(text))
        }
        var bytes: [UInt8] = []
        var iterator = text.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                let decoded = high << 4 | low
                guard decoded != 0 else { return nil }
                bytes.append(decoded)
            case 0: return nil
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 65...70: byte - 55
        case 97...102: byte - 87
        default: nil
        }
    }

    // MARK: CORS

    private func allowedOrigin(_ request: HTTPRequest) -> String? {
        guard let origin = request.headers["Origin"] else { return nil }
        if options.corsOrigins.contains("*") { return "*" }
        return options.corsOrigins.contains(origin) ? origin : nil
    }

    /// Adds the CORS response fields, and `Vary: Origin` only when they depend on the request's
    /// `Origin`, so a cache (nginx's segment cache) keeps one copy whatever `Origin` says:
    /// - no CORS origins: no fields, no `Vary`;
    /// - `*`, or a single origin: `Access-Control-Allow-Origin` with that value on every response, with
    ///   or without an `Origin` (a browser on another origin sees the mismatch and refuses it);
    /// - several origins: the allowed origin echoed, and `Vary: Origin` on every response, those
    ///   without `Access-Control-Allow-Origin` too (otherwise a cached copy without the field would
    ///   be served to an allowed origin).
    /// `*` never comes with credentials. The other field is what hls.js reads.
    private func applyCORS(_ request: HTTPRequest, to response: inout HTTPResponse) {
        let origins = options.corsOrigins
        let origin: String
        if origins.contains("*") {
            origin = "*"
        } else if origins.count == 1 {
            origin = origins[0]
        } else {
            guard !origins.isEmpty else { return }
            response.headers.add("Vary", "Origin")
            guard let allowed = allowedOrigin(request) else { return }
            origin = allowed
        }
        response.headers.set("Access-Control-Allow-Origin", origin)
        response.headers.set("Access-Control-Expose-Headers", "Content-Length, Content-Range, Accept-Ranges, Location")
    }

    private func preflight(_ request: HTTPRequest, allow: String) -> HTTPResponse {
        guard request.headers["Origin"] != nil else {
            return HTTPResponse(status: 204, headers: HTTPHeaders([("Allow", allow)]))
        }
        guard allowedOrigin(request) != nil else {
            return Problem(
                code: "origin-not-allowed", title: "Origin not allowed", status: 403,
                detail: "This origin may not make cross-origin requests here."
            ).response()
        }
        return HTTPResponse(
            status: 204,
            headers: HTTPHeaders([
                ("Allow", allow), ("Access-Control-Allow-Methods", allow),
                ("Access-Control-Allow-Headers", "Authorization, Content-Type, Range, Idempotency-Key"),
                ("Access-Control-Max-Age", "600"),
            ]))
    }
}

/// `text` with anything but printable ASCII replaced by `?`, cut to 80 characters, for messages.
func printable(_ text: String) -> String {
    let cut = text.utf8.prefix(80).map { ($0 >= 0x20 && $0 < 0x7F) ? $0 : UInt8(ascii: "?") }
    return String(decoding: cut, as: UTF8.self) + (text.utf8.count > 80 ? "…" : "")
}
