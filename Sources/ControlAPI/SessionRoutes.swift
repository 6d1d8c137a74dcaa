import FoundationEssentials
import Gateway
import HTTPServer
import SystemSupport

/// Sessions: creation with a signed playback URL, revocation, capture-state reports, commands and the
/// session's event stream.
enum SessionRoutes {
    static func routes(gateway: Gateway, publicURL: String?) -> [Route] {
        [
            Route("POST", "/v1/sessions", access: .scope(.control)) { context in
                let body = try SessionCreationBody(
                    context.jsonObject(), maxTTL: Int64(gateway.configuration.maxSessionTTL))
                let asset = body.asset
                let (session, token) = try gateway.createSession(
                    asset: asset, ttl: body.ttlSeconds.map(TimeInterval.init), remote: context.request.remoteAddress)
                let master = gateway.asset(asset)?.master ?? "master.m3u8"
                let path = "/v1/hls/\(asset)/\(master)?token=\(token)"
                let playerPath = "/v1/sessions/\(session.id)/player?token=\(token)"
                let base = publicURL ?? hostURL(context.request.headers["Host"])
                let json = JSON.object([
                    "id": .string(session.id), "asset": .string(asset),
                    "createdAt": Representation.date(session.createdAt),
                    "expiresAt": Representation.date(session.expiresAt), "token": .string(token),
                    "playbackPath": .string(path), "playbackUrl": base.map { .string($0 + path) },
                    "playerPath": .string(playerPath), "playerUrl": base.map { .string($0 + playerPath) },
                ])
                return json.response(status: 201, headers: HTTPHeaders([("Location", "/v1/sessions/\(session.id)")]))
            },
            Route("GET", "/v1/sessions/{id}", access: .scopeOrSessionToken(.control)) { context in
                guard let session = gateway.sessions.session(context.parameter("id")) else {
                    throw GatewayError(.notFound, code: "session-not-found", detail: "No such session.")
                }
                return Representation.session(session).response()
            },
            Route("DELETE", "/v1/sessions/{id}", access: .scope(.control)) { context in
                try gateway.revokeSession(context.parameter("id"), remote: context.request.remoteAddress)
                return HTTPResponse(status: 204, headers: HTTPHeaders([("Cache-Control", "no-store")]))
            },
            Route("PUT", "/v1/sessions/{id}/capture-state", access: .scopeOrSessionToken(.control)) { context in
                let body = try CaptureReportBody(context.jsonObject())
                let (outcome, session) = try gateway.reportCapture(
                    session: context.parameter("id"), capturing: body.capturing, seq: body.seq,
                    observedAt: body.observedAt)
                let applied: Bool
                if case .applied = outcome { applied = true } else { applied = false }
                return JSON.object(["applied": .bool(applied), "capture": Representation.capture(session.capture)])
                    .response()
            },
            Route("POST", "/v1/sessions/{id}/commands", access: .scope(.control)) { context in
                let command = try SessionCommandBody(context.jsonObject()).command
                try gateway.send(command, to: context.parameter("id"))
                return JSON.object(["command": .string(command.rawValue), "session": .string(context.parameter("id"))])
                    .response(status: 202)
            },
            Route("GET", "/v1/sessions/{id}/events", access: .scopeOrSessionToken(.control)) { context in
                // The credential that let the caller in: the session token, or else the API token.
                let bearer = Router.bearer(context.request.headers)
                let holder = (context.scopes.isEmpty ? context.query["token"] ?? bearer : bearer) ?? ""
                return try events(
                    gateway: gateway, session: context.parameter("id"), holder: holder,
                    resumingAfter: lastEventID(context.request.headers["Last-Event-ID"]))
            },
        ]
    }

    /// An event stream of the session's capture state, commands and revocation. It opens with the
    /// current capture state and ends after a revocation. Streams are capped per session, per token
    /// (`holder`) and in all: over a cap the answer is 429 (503 for the total) with `Retry-After`.
    ///
    /// Revocations and changes of capture state carry an event ID, their number in the session. A
    /// stream resumed with `Last-Event-ID` (`resumingAfter`), on this node or on any other sharing the
    /// store, opens instead with the stored events after that ID and then goes on live: each event
    /// once, none missed, none twice. Unless the last of them already says it, the current capture
    /// state follows the replay, without an ID: a client fails closed while it is away (the web page
    /// turns `unknown`), and a lease that lapsed meanwhile is not a stored event.
    static func events(
        gateway: Gateway, session id: String, holder: String, resumingAfter lastEventID: Int64? = nil
    ) throws -> HTTPResponse {
        guard let current = gateway.sessions.session(id) else {
            throw GatewayError(.notFound, code: "session-not-found", detail: "No such session.")
        }
        let resume = lastEventID
        let ticket: StreamQuota.Ticket
        switch gateway.streams.admit(session: id, holder: holder) {
        case .success(let admitted): ticket = admitted
        case .failure(let refusal):
            // The connection is closed too, so a refused client cannot keep holding it.
            return streamProblem(refusal, quota: gateway.streams).problem.response(
                headers: HTTPHeaders([("Connection", "close")]))
        }
        let stream = EventStream()
        stream.onClose { ticket.release() }
        stream.send(Array("retry: 3000\n\n".utf8))
        // Subscribe before reading what to send first, so no change falls between the two; until the
        // opening events are out, live ones wait in `gate`.
        let gate = EventGate()
        let subscription = gateway.events.subscribe(session: id) { event, eventID in
            gate.deliver(event, id: eventID, to: stream)
        }
        stream.onClose { gateway.events.unsubscribe(session: id, id: subscription) }
        var opening: [(SessionEvent, Int64?)]
        let capture = gateway.sessions.session(id)?.capture ?? current.capture
        if let resume {
            do {
                opening = try gateway.sessions.storedEvents(session: id, after: resume).map { ($0.0, $0.1) }
            } catch {
                gateway.events.unsubscribe(session: id, id: subscription)
                ticket.release()
                throw error
            }
            let lastState = opening.compactMap { if case .captureState(let state) = $0.0 { state.state } else { nil } }
                .last
            if lastState != capture.state { opening.append((.captureState(capture), nil)) }
        } else {
            opening = [(.captureState(capture), nil)]
        }
        if let revokedAt = current.record.revokedAt,
            !opening.contains(where: { if case .revoked = $0.0 { true } else { false } })
        {
            opening.append((.revoked(at: revokedAt), nil))
        }
        gate.open(with: opening, after: resume ?? 0, to: stream)
        return HTTPResponse(status: 200, headers: eventStreamHeaders, body: .stream(stream))
    }

    /// The event ID a reconnecting client sends: a number of at most 18 digits, else nil (and the
    /// stream starts afresh).
    static func lastEventID(_ value: String?) -> Int64? {
        guard let value, !value.isEmpty, value.utf8.count <= 18, value.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
        else { return nil }
        return Int64(value)
    }

    /// The answer over a stream cap: 429 for a session's or a token's, 503 for the gateway's.
    static func streamProblem(_ refusal: StreamRefusal, quota: StreamQuota) -> APIProblem {
        switch refusal {
        case .perSession:
            APIProblem.later(
                429, refusal.rawValue, "Too many event streams",
                "This session already has \(quota.perSession) event streams open; close one first.", retryAfter: 5)
        case .perToken:
            APIProblem.later(
                429, refusal.rawValue, "Too many event streams",
                "This token already holds \(quota.perToken) event streams open; close one first.", retryAfter: 5)
        case .total:
            APIProblem.later(
                503, refusal.rawValue, "Too many event streams",
                "The gateway has as many event streams open as it allows; try again later.", retryAfter: 10)
        }
    }

    /// `http://host` from a `Host` field that is a plain host name or address with an optional port.
    static func hostURL(_ host: String?) -> String? {
        guard let host, !host.isEmpty, host.utf8.count <= 255,
            host.utf8.allSatisfy({
                Identifier.isIDByte($0)
                    || [UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]")].contains($0)
            })
        else { return nil }
        return "http://\(host)"
    }
}
