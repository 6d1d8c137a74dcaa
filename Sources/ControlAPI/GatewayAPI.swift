public import Gateway
public import HTTPServer

/// The gateway's REST API: every route of `guard-play serve`, and the server that carries them.
public enum GatewayAPI {
    /// The routes of `guard-play serve`, in match order.
    public static func routes(gateway: Gateway, state: ServiceState, publicURL: String?) -> [Route] {
        OpsRoutes.routes(state: state, metrics: gateway.metrics, unready: { gateway.unreadyReason })
            + SessionRoutes.routes(gateway: gateway, publicURL: publicURL)
            + MediaRoutes.routes(gateway: gateway) + WatermarkRoutes.routes(gateway: gateway)
            + AssetRoutes.routes(gateway: gateway)
            + JobRoutes.routes(gateway: gateway) + WebPlayerRoutes.routes(gateway: gateway)
    }

    /// The router of `guard-play serve`: the gateway's routes, API tokens from its store, and session
    /// tokens for the session routes that accept them.
    public static func router(
        gateway: Gateway, state: ServiceState, publicURL: String?, corsOrigins: [String],
        log: @escaping @Sendable (String) -> Void
    ) -> Router {
        Router(
            routes: routes(gateway: gateway, state: state, publicURL: publicURL),
            options: RouterOptions(
                corsOrigins: corsOrigins, authenticate: { gateway.authenticate(bearer: $0) },
                sessionToken: { gateway.sessionToken($0, authorizes: $1) }, log: log),
            metrics: gateway.metrics)
    }

    /// An HTTP server that answers with `router`, its own refusals included.
    public static func server(configuration: HTTPServerConfiguration, router: Router) -> HTTPServer {
        HTTPServer(
            configuration: configuration, rejectionResponder: { router.respond(to: $0) },
            handler: { router.respond(to: $0) })
    }
}
