import Gateway
import HTTPServer
import SystemSupport

/// `/livez`, `/readyz`, `/metrics` and the OpenAPI document. `/livez` is always open; `access` says
/// who may read the others (open on the gateway, which has its own network policy for them; the
/// player's control server keeps them behind its token).
enum OpsRoutes {
    /// The ops routes; `unready` says why the service should not take traffic (nil when it should).
    static func routes(
        state: ServiceState, metrics: Metrics, document: [UInt8] = OpenAPIDocument.json, access: Access = .open,
        unready: @escaping @Sendable () -> String? = { nil }
    ) -> [Route] {
        [
            Route("GET", "/livez", access: .open) { _ in
                JSON.object(["status": "live"]).response()
            },
            Route("GET", "/readyz", access: access) { _ in
                if state.isDraining { return JSON.object(["status": "draining"]).response(status: 503) }
                if let reason = unready() {
                    return JSON.object(["status": "not-ready", "reason": .string(reason)]).response(status: 503)
                }
                return JSON.object(["status": "ready"]).response()
            },
            Route("GET", "/metrics", access: access) { _ in
                HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders([
                        ("Content-Type", "text/plain; version=0.0.4; charset=utf-8"), ("Cache-Control", "no-store"),
                    ]),
                    body: .bytes(Array(metrics.render().utf8)))
            },
            Route("GET", "/v1/openapi.json", access: access) { _ in
                HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders([
                        ("Content-Type", "application/json"), ("Cache-Control", "public, max-age=300"),
                    ]),
                    body: .bytes(document))
            },
        ]
    }
}
