import Gateway
import HTTPServer

/// `/livez`, `/readyz`, `/metrics` and the OpenAPI document.
enum OpsRoutes {
    /// The ops routes; `unready` says why the service should not take traffic (nil when it should).
    static func routes(
        state: ServiceState, metrics: Metrics, unready: @escaping @Sendable () -> String? = { nil }
    ) -> [Route] {
        [
            Route("GET", "/livez", access: .open) { _ in
                JSON.object(["status": "live"]).response()
            },
            Route("GET", "/readyz", access: .open) { _ in
                if state.isDraining { return JSON.object(["status": "draining"]).response(status: 503) }
                if let reason = unready() {
                    return JSON.object(["status": "not-ready", "reason": .string(reason)]).response(status: 503)
                }
                return JSON.object(["status": "ready"]).response()
            },
            Route("GET", "/metrics", access: .open) { _ in
                HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders([
                        ("Content-Type", "text/plain; version=0.0.4; charset=utf-8"), ("Cache-Control", "no-store"),
                    ]),
                    body: .bytes(Array(metrics.render().utf8)))
            },
            Route("GET", "/v1/openapi.json", access: .open) { _ in
                HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders([
                        ("Content-Type", "application/json"), ("Cache-Control", "public, max-age=300"),
                    ]),
                    body: .bytes(OpenAPIDocument.json))
            },
        ]
    }
}
