import Gateway
import HTTPServer
import SystemSupport

/// Assets: listing, import of an already packaged directory, and the key policy.
enum AssetRoutes {
    static func routes(gateway: Gateway) -> [Route] {
        [
            Route("GET", "/v1/assets", access: .scope(.control)) { context in
                let limit = try pageLimit(context)
                let cursor = context.query["cursor"]
                // A cursor is the ID of the last asset of a page, so it names an asset that exists.
                if let cursor, !Identifier.isValid(cursor) || gateway.asset(cursor) == nil {
                    throw APIProblem.badRequest("invalid-cursor", "cursor is not a cursor this API returned.")
                }
                let all = gateway.assets().filter { cursor == nil || $0.id > cursor! }
                let page = Array(all.prefix(limit))
                return JSON.object([
                    "items": .array(page.map(Representation.asset)),
                    "nextCursor": all.count > limit ? page.last.map { .string($0.id) } : nil,
                ]).response()
            },
            Route("GET", "/v1/assets/{id}", access: .scope(.control)) { context in
                guard let asset = gateway.asset(context.parameter("id")) else {
                    throw GatewayError(.notFound, code: "asset-not-found", detail: "No such asset.")
                }
                return Representation.asset(asset).response()
            },
            Route("PUT", "/v1/assets/{id}", access: .scope(.admin)) { context in
                let body = try AssetImportBody(context.jsonObject())
                let existed = gateway.asset(context.parameter("id")) != nil
                let asset = try gateway.importAsset(
                    id: context.parameter("id"), directory: body.directory, keys: body.keys,
                    denyKeysWhileCapturing: body.denyKeysWhileCapturing)
                return Representation.asset(asset).response(status: existed ? 200 : 201)
            },
            Route("PUT", "/v1/assets/{id}/policy", access: .scope(.control)) { context in
                let body = try AssetPolicyBody(context.jsonObject())
                let asset = try gateway.setPolicy(
                    asset: context.parameter("id"), denyKeysWhileCapturing: body.denyKeysWhileCapturing)
                return Representation.asset(asset).response()
            },
        ]
    }
}
