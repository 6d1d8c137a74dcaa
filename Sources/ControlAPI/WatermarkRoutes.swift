import Gateway
import HTTPServer

/// A session's variants of watermarked segments: the paths its media playlists name them by.
enum WatermarkRoutes {
    static func routes(gateway: Gateway) -> [Route] {
        let serve: Route.Handler = { context in
            let name =
                context.parameters["dir"].map { "\($0)/" + context.parameter("name") } ?? context.parameter("name")
            switch gateway.watermarkedSegment(
                asset: context.parameter("asset"), session: context.parameter("session"), tag: context.parameter("tag"),
                name: name, remote: context.request.remoteAddress)
            {
            case .success(let (file, variantPath)):
                // nginx keys its cache by this header (auth_request_set), so each variant file is cached
                // once whatever session's path asked for it.
                return MediaRoutes.fileResponse(file, context: context, headers: [("X-GuardPlay-Variant", variantPath)])
            case .failure(.rateLimited):
                return AccessRefusal.rateLimited.problem(retryAfter: gateway.refusalRetryAfter).response()
            case .failure(let refusal):
                throw APIProblem(refusal.status, refusal.rawValue, refusal.title, refusal.detail)
            }
        }
        return [
            Route("GET", "/v1/wm/{asset}/{session}/{tag}/{name:file}", access: .open, handler: serve),
            Route("GET", "/v1/wm/{asset}/{session}/{tag}/{dir}/{name:file}", access: .open, handler: serve),
        ]
    }

}
