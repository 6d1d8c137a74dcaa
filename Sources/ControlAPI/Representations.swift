import FoundationEssentials
import Gateway
import HTTPServer
import Store
import SystemSupport

/// JSON shapes of the gateway's values, as `docs/openapi.yaml` defines them.
enum Representation {
    static func date(_ date: Date?) -> JSON? { date.map { .string(RFC3339.format($0)) } }

    static func capture(_ capture: CaptureSnapshot) -> JSON {
        .object([
            "state": .string(capture.state.rawValue), "reason": .string(capture.reason), "since": date(capture.since),
            "seq": capture.seq.map { .number(Double($0)) }, "observedAt": date(capture.observedAt),
            "leaseExpiresAt": date(capture.leaseExpiresAt),
        ])
    }

    static func session(_ session: SessionSnapshot) -> JSON {
        .object([
            "id": .string(session.record.id), "asset": .string(session.record.assetID),
            "createdAt": date(session.record.createdAt), "expiresAt": date(session.record.expiresAt),
            "revoked": .bool(session.record.revokedAt != nil), "revokedAt": date(session.record.revokedAt),
            "capture": capture(session.capture),
        ])
    }

    static func asset(_ asset: AssetSummary) -> JSON {
        .object([
            "id": .string(asset.id), "denyKeysWhileCapturing": .bool(asset.denyKeysWhileCapturing),
            "master": asset.master.map { .string($0) }, "files": .number(Double(asset.fileCount)),
            "kids": .array(asset.kids.map { .string($0) }), "createdAt": date(asset.createdAt),
            "updatedAt": date(asset.updatedAt), "watermark": asset.watermark.map(watermark),
        ])
    }

    static func watermark(_ summary: WatermarkSummary) -> JSON {
        .object([
            ("codewordBits", .number(Double(summary.codewordBits))),
            ("segmentSeconds", .number(summary.segmentSeconds)),
            ("identifiesAfterSeconds", .number(summary.identifiesAfterSeconds)),
        ])
    }

    static func job(_ job: JobRecord) -> JSON {
        .object([
            "id": .string(job.id), "state": .string(job.state.rawValue), "input": .string(job.input),
            "asset": .string(job.assetID), "denyKeysWhileCapturing": .bool(job.denyKeysWhileCapturing),
            "progress": .number((job.progress * 1000).rounded() / 1000), "attempts": .number(Double(job.attempts)),
            "kid": job.kid.map { .string($0) }, "error": job.error.map { .string($0) },
            "container": .string(PackagingJobOptions(stored: job.options).container),
            "encryption": .string(PackagingJobOptions(stored: job.options).encryption),
            "keyPeriod": PackagingJobOptions(stored: job.options).keyPeriod.map { .number(Double($0)) },
            "watermark": PackagingJobOptions(stored: job.options).watermark.map { .string($0) },
            "segmentDuration": .number(
                PackagingJobOptions(stored: job.options).segmentDuration ?? PackagingJobOptions.defaultSegmentDuration),
            "createdAt": date(job.createdAt),
            "updatedAt": date(job.updatedAt),
        ])
    }

    /// One Server-Sent Event: its name, a single-line JSON payload and, when it has one, its event ID
    /// (which a client's `Last-Event-ID` names when it reconnects).
    static func event(_ name: String, _ data: JSON, id: Int64? = nil) -> [UInt8] {
        Array("event: \(name)\ndata: ".utf8) + data.serialized + Array("\n\(id.map { "id: \($0)\n" } ?? "")\n".utf8)
    }

    static func event(_ event: SessionEvent, id: Int64? = nil) -> [UInt8] {
        switch event {
        case .captureState(let capture): Self.event("capture-state", self.capture(capture), id: id)
        case .command(let command, let at):
            Self.event("command", .object(["command": .string(command.rawValue), "at": date(at)]), id: id)
        case .revoked(let at): Self.event("revoked", .object(["at": date(at)]), id: id)
        }
    }
}

extension JSON {
    /// A response with this JSON as its body.
    func response(status: Int = 200, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("Content-Type", "application/json")
        if !headers.contains("Cache-Control") { headers.set("Cache-Control", "no-store") }
        return HTTPResponse(status: status, headers: headers, body: .bytes(serialized))
    }
}

/// The headers that open an event stream.
let eventStreamHeaders = HTTPHeaders([
    ("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
])

/// The page size and cursor of a list request: `limit` from 1 to 100 (default 20).
func pageLimit(_ context: RequestContext) throws -> Int {
    guard let text = context.query["limit"] else { return 20 }
    guard let limit = Int(text), (1...100).contains(limit) else {
        throw APIProblem.badRequest("invalid-limit", "limit must be an integer from 1 to 100.")
    }
    return limit
}
