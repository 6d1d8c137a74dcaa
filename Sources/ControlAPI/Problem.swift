public import Gateway
public import HTTPServer
import SystemSupport

/// An RFC 9457 problem detail: the body of every error response, as `application/problem+json`.
public struct Problem: Sendable, Equatable {
    /// A stable code; the `type` URI is `/problems/{code}`.
    public let code: String
    /// A short summary of the problem type.
    public let title: String
    /// The HTTP status.
    public let status: Int
    /// What went wrong with this request.
    public let detail: String
    /// Extra members (`allow`, `reason`…).
    public let extensions: [(String, JSON)]
    /// Seconds the client should wait before trying again, sent as `Retry-After` (429 and 503).
    public let retryAfter: Int?

    /// A problem with its code, title, status and detail.
    public init(
        code: String, title: String, status: Int, detail: String, extensions: [(String, JSON)] = [],
        retryAfter: Int? = nil
    ) {
        self.code = code
        self.title = title
        self.status = status
        self.detail = detail
        self.extensions = extensions
        self.retryAfter = retryAfter
    }

    public static func == (lhs: Problem, rhs: Problem) -> Bool {
        lhs.code == rhs.code && lhs.status == rhs.status && lhs.detail == rhs.detail
    }

    /// The JSON body.
    public var json: JSON {
        .object(
            [
                ("type", .string("/problems/\(code)")), ("title", .string(title)), ("status", .number(Double(status))),
                ("detail", .string(detail)),
            ] + extensions)
    }

    /// The response carrying this problem.
    public func response(headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("Content-Type", "application/problem+json")
        headers.set("Cache-Control", "no-store")
        if let retryAfter { headers.set("Retry-After", String(retryAfter)) }
        return HTTPResponse(status: status, headers: headers, body: .bytes(json.serialized))
    }
}

/// An error that chooses its own problem (and so its own status).
public protocol ProblemConvertible: Error {
    /// The problem to answer with.
    var problem: Problem { get }
    /// The `WWW-Authenticate` challenge a 401 carries (RFC 9110 §11.6.1), or nil.
    var challenge: String? { get }
}

extension ProblemConvertible {
    public var challenge: String? { nil }
}

/// The `WWW-Authenticate` value for a bearer-token realm; `invalid` adds RFC 6750's
/// `error="invalid_token"` for a token that was sent but not accepted.
func bearerChallenge(realm: String, invalid: Bool) -> String {
    "Bearer realm=\"\(realm)\"" + (invalid ? ", error=\"invalid_token\"" : "")
}

/// A problem raised directly by the API layer: bad JSON, a missing field, a bad query.
public struct APIProblem: ProblemConvertible, Sendable {
    public let problem: Problem

    /// A problem with `code` and `status`.
    public init(_ status: Int, _ code: String, _ title: String, _ detail: String) {
        problem = Problem(code: code, title: title, status: status, detail: detail)
    }

    /// 400: the request is malformed.
    public static func badRequest(_ code: String, _ detail: String) -> APIProblem {
        APIProblem(400, code, "Bad request", detail)
    }

    /// 422: the request is well formed but a field's value is not acceptable.
    public static func invalid(_ detail: String) -> APIProblem {
        APIProblem(422, "invalid-field", "Invalid field", detail)
    }

    /// 429 or 503 with `Retry-After`: the client should come back later.
    public static func later(_ status: Int, _ code: String, _ title: String, _ detail: String, retryAfter: Int)
        -> APIProblem
    {
        APIProblem(problem: Problem(code: code, title: title, status: status, detail: detail, retryAfter: retryAfter))
    }

    private init(problem: Problem) { self.problem = problem }

    /// 404: nothing here.
    public static func notFound(_ detail: String) -> APIProblem {
        APIProblem(404, "not-found", "Not found", detail)
    }
}

extension GatewayError: ProblemConvertible {
    public var problem: Problem {
        // An unreachable database is usually back within seconds.
        Problem(
            code: code, title: title, status: status, detail: detail,
            retryAfter: code == "storage-unavailable" ? 2 : nil)
    }

    private var title: String {
        switch kind {
        case .notFound: "Not found"
        case .forbidden: "Forbidden"
        case .invalid: "Invalid request"
        case .conflict: "Conflict"
        case .unavailable: "Unavailable"
        case .storage: "Storage error"
        }
    }
}

extension AccessRefusal: ProblemConvertible {
    public var problem: Problem { problem(retryAfter: nil) }

    /// The problem, telling the client when to try again (for `rateLimited`).
    public func problem(retryAfter: Int?) -> Problem {
        Problem(code: rawValue, title: title, status: status, detail: detail, retryAfter: retryAfter)
    }

    /// Keys and playlists take session tokens, a realm of their own apart from API tokens.
    public var challenge: String? {
        guard status == 401 else { return nil }
        return bearerChallenge(realm: "guard-play-session", invalid: self != .tokenMissing)
    }
}

extension APITokenRefusal: ProblemConvertible {
    public var problem: Problem {
        switch self {
        case .missing:
            Problem(
                code: rawValue, title: "API token missing", status: 401,
                detail: "This route needs an API token: Authorization: Bearer gp_….")
        case .invalid:
            Problem(code: rawValue, title: "API token invalid", status: 401, detail: "The API token is not valid.")
        case .revoked:
            Problem(code: rawValue, title: "API token revoked", status: 401, detail: "The API token has been revoked.")
        case .insufficientScope:
            Problem(
                code: rawValue, title: "Insufficient scope", status: 403,
                detail: "The API token does not grant the scope this route needs.")
        case .storeUnavailable:
            Problem(
                code: rawValue, title: "Unavailable", status: 503,
                detail: "The gateway cannot reach its database to check the API token. Try again shortly.",
                retryAfter: 2)
        }
    }

    public var challenge: String? {
        switch self {
        case .missing: bearerChallenge(realm: "guard-play", invalid: false)
        case .invalid, .revoked: bearerChallenge(realm: "guard-play", invalid: true)
        case .insufficientScope, .storeUnavailable: nil
        }
    }
}

extension Rejection {
    /// The server's own refusals, as problems.
    public var problem: Problem {
        Problem(code: reason.rawValue, title: reasonPhrase(status), status: status, detail: detail)
    }
}
