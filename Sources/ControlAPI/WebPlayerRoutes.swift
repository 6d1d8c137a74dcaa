import Gateway
import HTTPServer

/// The web player: a session's page, opened with the session token, and the page's own files.
enum WebPlayerRoutes {
    static func routes(gateway: Gateway) -> [Route] {
        [
            Route("GET", "/v1/sessions/{id}/player", access: .open) { context in
                let id = context.parameter("id")
                let claims: SessionClaims
                switch gateway.sessionClaims(context.query["token"], session: id) {
                case .success(let verified): claims = verified
                case .failure(let refusal): throw refusal
                }
                let master = gateway.asset(claims.assetID)?.master ?? "master.m3u8"
                let page = WebPlayerAssets.page(session: id, masterPath: "/v1/hls/\(claims.assetID)/\(master)")
                return HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders(
                        [
                            ("Content-Type", "text/html; charset=utf-8"),
                            // The page's address carries the session token.
                            ("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer"),
                        ] + hardening(csp: true)),
                    body: .bytes(Array(page.utf8)))
            },
            Route("GET", "/v1/web-player/{name:file}", access: .open) { context in
                let name = context.parameter("name")
                guard name != "player.html", let text = WebPlayerAssets.file(name) else {
                    throw APIProblem.notFound("The web player has no file '\(printable(name))'.")
                }
                return HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders(
                        [("Content-Type", WebPlayerAssets.contentType(name)), ("Cache-Control", "no-cache")]
                            + hardening(csp: false)),
                    body: .bytes(Array(text.utf8)))
            },
        ]
    }

    /// No sniffing, no framing and, for the page, its Content-Security-Policy.
    static func hardening(csp: Bool) -> [(String, String)] {
        [("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY")]
            + (csp ? [("Content-Security-Policy", WebPlayerAssets.contentSecurityPolicy)] : [])
    }
}
