public import FoundationEssentials
public import Gateway
import HTTPServer
import SystemSupport

/// A player's state as the control API reports it.
public struct PlayerStatusReport: Sendable, Equatable {
    /// `playing`, `paused` or `ended`.
    public var state: String
    /// Seconds into the media.
    public var position: Double
    /// The media's length, when known.
    public var duration: Double?
    /// The merged capture state: `clear`, `capturing` or `unknown`.
    public var capture: String
    /// The source that decided it.
    public var captureSource: String
    /// Why.
    public var captureReason: String
    /// True while audio is muted and video masked.
    public var protecting: Bool

    /// A status report.
    public init(
        state: String, position: Double, duration: Double?, capture: String, captureSource: String,
        captureReason: String, protecting: Bool
    ) {
        self.state = state
        self.position = position
        self.duration = duration
        self.capture = capture
        self.captureSource = captureSource
        self.captureReason = captureReason
        self.protecting = protecting
    }
}

/// What became of a remote capture report sent to a player.
public enum PlayerReportOutcome: Sendable, Equatable {
    /// Applied; its lease runs from now.
    case accepted
    /// Ignored: its sequence number is not newer than `lastSeq`.
    case stale(lastSeq: UInt64)
}

/// A player under REST control (`guard-play FILE --control ADDR`). The player core implements it; the
/// control API only calls it. Events are pushed to subscribers, which return false once they can
/// take no more.
public protocol PlayerControlling: Sendable {
    /// The player's state now.
    var status: PlayerStatusReport { get }
    /// Pauses playback.
    func pause()
    /// Resumes playback.
    func resume()
    /// Seeks to `seconds` into the media.
    func seek(to seconds: Double)
    /// Applies a report from the remote capture source, whose lease lasts `lease` seconds.
    func reportCapture(capturing: Bool, seq: UInt64, lease: Double, observedAt: Date) -> PlayerReportOutcome
    /// Sends each later status change to `subscriber` as an event name and JSON payload, until it
    /// returns false or `unsubscribe` is called; returns the subscription's ID.
    func subscribe(_ subscriber: @escaping @Sendable (_ event: String, _ payload: JSON) -> Bool) -> Int
    /// Ends a subscription.
    func unsubscribe(_ id: Int)
}

/// `/v1/player` routes, served by `guard-play FILE --control ADDR`.
public enum PlayerRoutes {
    /// The lease a remote capture report holds when the request does not say.
    public static let defaultLease = 10.0
    /// The longest lease a report may ask for: three of the gateway's default leases, so one report
    /// cannot hold `clear` for long after its client stops reporting.
    public static let maxLease = 3 * GatewayConfiguration.defaultCaptureLease

    /// The routes for `player`; every one needs an API token with the `control` scope. Reports whose
    /// `observedAt` is far from `now` (`ObservedAtWindow`) are refused.
    public static func routes(player: any PlayerControlling, now: @escaping @Sendable () -> Date = Date.init)
        -> [Route]
    {
        [
            Route("GET", "/v1/player", access: .scope(.control)) { _ in
                representation(player.status).response()
            },
            Route("POST", "/v1/player/pause", access: .scope(.control)) { _ in
                player.pause()
                return representation(player.status).response()
            },
            Route("POST", "/v1/player/resume", access: .scope(.control)) { _ in
                player.resume()
                return representation(player.status).response()
            },
            Route("POST", "/v1/player/seek", access: .scope(.control)) { context in
                let position = try PlayerSeekBody(context.jsonObject()).position
                if let duration = player.status.duration, position > duration {
                    throw APIProblem.invalid("Field 'position' is past the end (\(duration) s).")
                }
                player.seek(to: position)
                return representation(player.status).response()
            },
            Route("PUT", "/v1/player/capture-state", access: .scope(.control)) { context in
                let body = try PlayerCaptureReportBody(context.jsonObject())
                try ObservedAtWindow(lease: body.leaseSeconds).check(body.observedAt, now: now())
                let outcome = player.reportCapture(
                    capturing: body.capturing, seq: body.seq, lease: body.leaseSeconds, observedAt: body.observedAt)
                var members: [(String, JSON)] = [("applied", .bool(outcome == .accepted))]
                if case .stale(let last) = outcome { members.append(("lastSeq", .number(Double(last)))) }
                members.append(("player", representation(player.status)))
                return JSON.object(members).response()
            },
            Route("GET", "/v1/player/events", access: .scope(.control)) { _ in
                let stream = EventStream()
                stream.send(Array("retry: 3000\n\n".utf8))
                let subscription = player.subscribe { event, payload in
                    stream.send(Representation.event(event, payload))
                }
                stream.onClose { player.unsubscribe(subscription) }
                stream.send(Representation.event("status", representation(player.status)))
                return HTTPResponse(status: 200, headers: eventStreamHeaders, body: .stream(stream))
            },
        ]
    }

    static func representation(_ status: PlayerStatusReport) -> JSON {
        .object([
            "state": .string(status.state), "position": .number((status.position * 1000).rounded() / 1000),
            "duration": status.duration.map { .number($0) }, "capture": .string(status.capture),
            "captureSource": .string(status.captureSource), "captureReason": .string(status.captureReason),
            "protecting": .bool(status.protecting),
        ])
    }
}

/// The REST API of `guard-play FILE --control ADDR`: the player routes, and the ops routes with the
/// player's own OpenAPI document; all but `/livez` need an API token with the `control` scope.
public enum PlayerAPI {
    /// A router for `player`, with API tokens checked by `authenticate` and reports checked against `now`.
    public static func router(
        player: any PlayerControlling, state: ServiceState, metrics: Metrics,
        authenticate: @escaping @Sendable (String?) -> Result<Set<Scope>, APITokenRefusal>,
        log: @escaping @Sendable (String) -> Void, now: @escaping @Sendable () -> Date = Date.init
    ) -> Router {
        Router(
            routes: OpsRoutes.routes(
                state: state, metrics: metrics, document: OpenAPIDocument.playerJSON, access: .scope(.control))
                + PlayerRoutes.routes(player: player, now: now),
            options: RouterOptions(authenticate: authenticate, log: log), metrics: metrics)
    }
}
