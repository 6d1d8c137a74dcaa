import FoundationEssentials
import Gateway
import HTTPServer
import SystemSupport

/// HLS playlists and segments, and content keys: the routes players call.
enum MediaRoutes {
    static func routes(gateway: Gateway) -> [Route] {
        let serve: Route.Handler = { context in
            let name =
                context.parameters["dir"].map { "\($0)/" + context.parameter("name") } ?? context.parameter("name")
            return try media(gateway: gateway, asset: context.parameter("asset"), name: name, context: context)
        }
        return [
            Route("GET", "/v1/hls/{asset}/{name:file}", access: .open, handler: serve),
            Route("GET", "/v1/hls/{asset}/{dir}/{name:file}", access: .open, handler: serve),
            Route("GET", "/v1/keys/{kid}", access: .open) { context in
                let token = context.query["token"] ?? Router.bearer(context.request.headers)
                switch gateway.deliverKey(
                    kid: context.parameter("kid"), token: token, remote: context.request.remoteAddress)
                {
                case .success(let key):
                    return HTTPResponse(
                        status: 200,
                        headers: HTTPHeaders([
                            ("Content-Type", "application/octet-stream"), ("Cache-Control", "no-store"),
                        ]),
                        body: .bytes(key))
                case .failure(.rateLimited):
                    return AccessRefusal.rateLimited.problem(retryAfter: gateway.refusalRetryAfter).response()
                case .failure(let refusal):
                    throw refusal
                }
            },
            Route("POST", "/v1/licenses/clearkey", access: .open) { context in
                try clearKeyLicense(gateway: gateway, context: context)
            },
        ]
    }

    /// A W3C Clear Key license: the JSON Web Key set of the asked key IDs, each checked as `/v1/keys/{kid}`
    /// checks it, or the problem of the first refused.
    static func clearKeyLicense(gateway: Gateway, context: RequestContext) throws -> HTTPResponse {
        guard context.request.body.count <= ClearKeyLicenseBody.maxBytes else {
            throw APIProblem(
                413, "license-request-too-large", "License request too large",
                "A license request is at most \(ClearKeyLicenseBody.maxBytes) bytes.")
        }
        let body = try ClearKeyLicenseBody(context.jsonObject())
        let token = context.query["token"] ?? Router.bearer(context.request.headers)
        switch gateway.deliverLicense(kids: body.kids, token: token, remote: context.request.remoteAddress) {
        case .success(let keys):
            let jwks = keys.map { entry in
                JSON.object([
                    ("kty", .string("oct")), ("kid", .string(ClearKeyID.base64URL(hexKID: entry.kid) ?? "")),
                    ("k", .string(ClearKeyID.base64URL(entry.key))),
                ])
            }
            return JSON.object([("keys", .array(jwks)), ("type", .string(body.type))]).response()
        case .failure(.rateLimited):
            return AccessRefusal.rateLimited.problem(retryAfter: gateway.refusalRetryAfter).response()
        case .failure(let refusal):
            throw refusal
        }
    }

    static func media(gateway: Gateway, asset: String, name: String, context: RequestContext) throws -> HTTPResponse {
        if let playlist = gateway.playlist(asset: asset, name: name, token: context.query["token"]) {
            switch playlist {
            case .success(let text):
                return HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders([
                        ("Content-Type", "application/vnd.apple.mpegurl"), ("Cache-Control", "private, no-store"),
                    ]),
                    body: .bytes(Array(text.utf8)))
            case .failure(let refusal):
                throw refusal
            }
        }
        guard let file = gateway.file(asset: asset, name: name), !file.isPlaylist else {
            throw APIProblem.notFound("No file '\(printable(name))' in asset '\(asset)'.")
        }
        switch gateway.refusesDirectVariant(asset: asset, name: name, remote: context.request.remoteAddress) {
        case nil: return fileResponse(file, context: context)
        case .rateLimited?: return AccessRefusal.rateLimited.problem(retryAfter: gateway.refusalRetryAfter).response()
        case let refusal?: throw APIProblem(refusal.status, refusal.rawValue, refusal.title, refusal.detail)
        }
    }

    /// `file` (or the range of it the request asks for), cacheable, with `headers` added.
    static func fileResponse(_ file: ServedFile, context: RequestContext, headers extra: [(String, String)] = [])
        -> HTTPResponse
    {
        var headers = HTTPHeaders(
            [
                ("Content-Type", file.contentType), ("Cache-Control", "public, max-age=31536000, immutable"),
                ("Accept-Ranges", "bytes"),
            ] + extra)
        switch ByteRange.parse(context.request.headers["Range"], size: file.size) {
        case .whole:
            return HTTPResponse(
                status: 200, headers: headers, body: .file(FileRegion(path: file.path, offset: 0, length: file.size)))
        case .partial(let range):
            headers.set("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(file.size)")
            return HTTPResponse(
                status: 206, headers: headers,
                body: .file(
                    FileRegion(path: file.path, offset: range.lowerBound, length: range.upperBound - range.lowerBound)))
        case .unsatisfiable:
            var problemHeaders = HTTPHeaders([("Content-Range", "bytes */\(file.size)")])
            problemHeaders.set("Accept-Ranges", "bytes")
            return Problem(
                code: "range-not-satisfiable", title: "Range not satisfiable", status: 416,
                detail: "The requested range lies outside the file's \(file.size) bytes."
            ).response(headers: problemHeaders)
        }
    }
}

/// A `Range` request field (RFC 9110 §14), for one range of bytes.
enum ByteRange: Equatable {
    /// No usable range: send the whole file.
    case whole
    /// Send these bytes.
    case partial(Range<UInt64>)
    /// The range starts past the end: 416.
    case unsatisfiable

    /// Reads `field` for a file of `size` bytes. A syntax it does not accept, or several ranges, are
    /// ignored (the whole file is sent), as RFC 9110 allows.
    static func parse(_ field: String?, size: UInt64) -> ByteRange {
        guard let field, field.hasPrefix("bytes=") else { return .whole }
        let spec = field.dropFirst(6).trimmingSpaces()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash]
        let last = spec[spec.index(after: dash)...]
        let digits: (Substring) -> Bool = {
            !$0.isEmpty && $0.count <= 19 && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
        }
        if first.isEmpty {
            guard digits(last), let suffix = UInt64(last), suffix > 0 else {
                return digits(last) ? .unsatisfiable : .whole
            }
            guard size > 0 else { return .unsatisfiable }
            return .partial((size - min(suffix, size))..<size)
        }
        guard digits(first), let start = UInt64(first) else { return .whole }
        var end = size
        if !last.isEmpty {
            guard digits(last), let inclusive = UInt64(last), inclusive >= start else { return .whole }
            end = min(inclusive + 1, size)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start..<end)
    }
}
