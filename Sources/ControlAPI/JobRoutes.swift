import Gateway
import HTTPServer
import SystemSupport

/// Packaging jobs: creation (idempotent with `Idempotency-Key`), listing with a cursor, progress and
/// cancellation.
enum JobRoutes {
    static func routes(gateway: Gateway) -> [Route] {
        [
            Route("POST", "/v1/packaging-jobs", access: .scope(.package)) { context in
                // Unknown members first, then the Idempotency-Key field, then the fields, as before.
                let object = try context.jsonObject().allowing(PackagingJobBody.fields)
                let key = try idempotencyKey(context.request.headers)
                let body = try PackagingJobBody(object)
                let (job, _) = try gateway.jobs.submit(
                    input: body.input, asset: body.asset, denyKeysWhileCapturing: body.denyKeysWhileCapturing,
                    idempotencyKey: key, options: body.options)
                return Representation.job(job).response(
                    status: 202, headers: HTTPHeaders([("Location", "/v1/packaging-jobs/\(job.id)")]))
            },
            Route("GET", "/v1/packaging-jobs", access: .scope(.package)) { context in
                let limit = try pageLimit(context)
                var cursor: Int64?
                if let text = context.query["cursor"] {
                    // The schema's pattern: ^[1-9][0-9]{0,17}$.
                    guard text.utf8.count <= 18, text.utf8.first != UInt8(ascii: "0"), let value = Int64(text),
                        value > 0, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
                    else { throw APIProblem.badRequest("invalid-cursor", "cursor is not a cursor this API returned.") }
                    cursor = value
                }
                let (jobs, next) = try gateway.jobs.list(after: cursor, limit: limit)
                return JSON.object([
                    "items": .array(jobs.map(Representation.job)), "nextCursor": next.map { .string(String($0)) },
                ]).response()
            },
            Route("GET", "/v1/packaging-jobs/{id}", access: .scope(.package)) { context in
                guard let job = try gateway.jobs.job(context.parameter("id")) else {
                    throw GatewayError(.notFound, code: "job-not-found", detail: "No such packaging job.")
                }
                return Representation.job(job).response()
            },
            Route("DELETE", "/v1/packaging-jobs/{id}", access: .scope(.package)) { context in
                guard let job = try gateway.jobs.cancel(context.parameter("id")) else {
                    throw GatewayError(.notFound, code: "job-not-found", detail: "No such packaging job.")
                }
                return Representation.job(job).response()
            },
        ]
    }

    /// The `Idempotency-Key` field: 1 to 255 visible ASCII characters, or absent.
    static func idempotencyKey(_ headers: HTTPHeaders) throws -> String? {
        let values = headers.values("Idempotency-Key")
        guard !values.isEmpty else { return nil }
        let key = values[0]
        guard values.count == 1, !key.isEmpty, key.utf8.count <= 255, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw APIProblem.badRequest(
                "invalid-idempotency-key", "Idempotency-Key must appear once, with 1 to 255 visible ASCII characters.")
        }
        return key
    }
}
