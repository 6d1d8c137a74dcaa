import ControlAPI
import Foundation
import Gateway
import HTTPServer
import Synchronization
import Testing

/// A player that records what the control API asks of it and answers capture reports with outcomes
/// the test scripts, so the tests check what the routes pass on and render, not logic of the stub's own.
final class RecordingPlayer: PlayerControlling {
    struct State {
        var report = PlayerStatusReport(
            state: "playing", position: 1, duration: 10, capture: "clear", captureSource: "none",
            captureReason: "no capture sources", protecting: false)
        var calls: [String] = []
        /// What the next capture reports return, in order; `.accepted` once these run out.
        var outcomes: [PlayerReportOutcome] = []
        var subscribers: [Int: @Sendable (String, JSON) -> Bool] = [:]
    }

    let state = Mutex(State())

    var status: PlayerStatusReport { state.withLock { $0.report } }
    func pause() {
        state.withLock {
            $0.calls.append("pause"); $0.report.state = "paused"
        }
    }
    func resume() {
        state.withLock {
            $0.calls.append("resume"); $0.report.state = "playing"
        }
    }
    func seek(to seconds: Double) {
        state.withLock {
            $0.calls.append("seek \(seconds)"); $0.report.position = seconds
        }
    }

    func reportCapture(capturing: Bool, seq: UInt64, lease: Double, observedAt: Date) -> PlayerReportOutcome {
        state.withLock { state in
            state.calls.append("report \(capturing) \(seq) \(lease) \(observedAt.timeIntervalSince1970)")
            return state.outcomes.isEmpty ? .accepted : state.outcomes.removeFirst()
        }
    }

    func subscribe(_ subscriber: @escaping @Sendable (String, JSON) -> Bool) -> Int {
        state.withLock { state in
            let id = state.subscribers.count + 1
            state.subscribers[id] = subscriber
            return id
        }
    }

    func unsubscribe(_ id: Int) { _ = state.withLock { $0.subscribers.removeValue(forKey: id) } }

    func emit(_ name: String, _ payload: JSON) {
        for subscriber in state.withLock({ Array($0.subscribers.values) }) { _ = subscriber(name, payload) }
    }
}

@Suite struct PlayerRouteTests {
    /// The player's clock: reports are checked against it.
    static let now = Date(timeIntervalSince1970: 1_798_761_600)
    let player = RecordingPlayer()
    let router: Router

    init() {
        router = PlayerAPI.router(
            player: player, state: ServiceState(), metrics: Metrics(),
            authenticate: { token in
                switch token {
                case "control": .success([.control])
                case "package": .success([.package])
                case nil: .failure(.missing)
                default: .failure(.invalid)
                }
            }, log: { _ in }, now: { Self.now })
    }

    func call(_ method: String, _ target: String, token: String? = "control", body: String? = nil) -> HTTPResponse {
        var headers = HTTPHeaders([("Host", "player.test")])
        if let token { headers.add("Authorization", "Bearer \(token)") }
        return router.respond(
            to: HTTPRequest(method: method, target: target, headers: headers, body: Array((body ?? "").utf8)))
    }

    @Test func needsAControlToken() {
        #expect(call("GET", "/v1/player", token: nil).problemCode == "api-token-missing")
        #expect(call("GET", "/v1/player", token: "package").status == 403)
        #expect(call("GET", "/v1/player").json?["state"] == "playing")
        #expect(call("GET", "/livez", token: nil).status == 200)
    }

    @Test func pausesResumesAndSeeksWithinTheMedia() {
        #expect(call("POST", "/v1/player/pause").json?["state"] == "paused")
        #expect(call("POST", "/v1/player/resume").json?["state"] == "playing")
        #expect(call("POST", "/v1/player/seek", body: #"{"position":4.5}"#).json?["position"] == .number(4.5))
        #expect(call("POST", "/v1/player/seek", body: #"{"position":11}"#).status == 422)
        #expect(call("POST", "/v1/player/seek", body: #"{"position":-1}"#).status == 422)
        #expect(call("POST", "/v1/player/seek", body: #"{"at":1}"#).status == 422)
        #expect(call("GET", "/v1/player/pause").status == 405)
        #expect(player.state.withLock { $0.calls } == ["pause", "resume", "seek 4.5"])
    }

    @Test func passesCaptureReportsToThePlayerAndRendersWhatItAnswers() {
        // The player's answers and state are set here; the route must pass the report on and render them.
        player.state.withLock { state in
            state.outcomes = [.accepted, .stale(lastSeq: 41), .accepted]
            state.report.capture = "capturing"
            state.report.captureSource = "remote:control"
            state.report.captureReason = "reported"
            state.report.protecting = true
        }
        let first = call(
            "PUT", "/v1/player/capture-state",
            body: #"{"capturing":true,"seq":7,"observedAt":"2027-01-01T00:00:00Z","leaseSeconds":2.5}"#)
        #expect(first.status == 200 && first.json?["applied"] == true && first.json?["lastSeq"] == nil)
        #expect(
            first.json?["player"]
                == .object([
                    ("state", "playing"), ("position", 1), ("duration", 10), ("capture", "capturing"),
                    ("captureSource", "remote:control"), ("captureReason", "reported"), ("protecting", true),
                ]))
        let stale = call(
            "PUT", "/v1/player/capture-state", body: #"{"capturing":false,"seq":8,"observedAt":"2027-01-01T00:00:00Z"}"#
        )
        #expect(stale.status == 200 && stale.json?["applied"] == false && stale.json?["lastSeq"] == 41)
        #expect(stale.json?["player"]?["protecting"] == true)
        let defaultLease = call(
            "PUT", "/v1/player/capture-state",
            body: #"{"capturing":false,"seq":9,"observedAt":"2027-01-01T01:00:01.5+01:00"}"#)
        #expect(defaultLease.json?["applied"] == true)
        // Invalid reports never reach the player.
        #expect(
            call("PUT", "/v1/player/capture-state", body: #"{"capturing":true,"seq":10,"observedAt":"now"}"#).status
                == 422)
        #expect(
            call(
                "PUT", "/v1/player/capture-state",
                body: #"{"capturing":true,"seq":10,"observedAt":"2027-01-01T00:00:00Z","leaseSeconds":0}"#
            ).status == 422)
        #expect(
            player.state.withLock { $0.calls } == [
                "report true 7 2.5 1798761600.0", "report false 8 10.0 1798761600.0",
                "report false 9 10.0 1798761601.5",
            ])
    }

    @Test func streamsStatusThenThePlayersEvents() {
        let response = call("GET", "/v1/player/events")
        guard case .stream(let stream) = response.body else {
            Issue.record("not a stream")
            return
        }
        #expect(
            String(decoding: stream.takePending(), as: UTF8.self).contains(
                "event: status\ndata: {\"state\":\"playing\""))
        player.emit("state", .object([("event", "state"), ("state", "capturing")]))
        #expect(
            String(decoding: stream.takePending(), as: UTF8.self)
                == "event: state\ndata: {\"event\":\"state\",\"state\":\"capturing\"}\n\n")
        stream.finish()
        #expect(player.state.withLock { $0.subscribers.isEmpty })
    }

    @Test func itsOpsRoutesButLivezNeedTheToken() {
        for target in ["/metrics", "/readyz", "/v1/openapi.json"] {
            let refused = call("GET", target, token: nil)
            #expect(refused.status == 401 && refused.headers["WWW-Authenticate"] != nil, "\(target)")
            #expect(call("GET", target, token: "wrong").status == 401, "\(target)")
            #expect(call("GET", target).status == 200, "\(target)")
        }
        #expect(call("GET", "/livez", token: nil).status == 200)
    }

    @Test func capsTheLeaseNearTheGatewaysAndRefusesReportsFarFromItsClock() {
        func report(_ seq: Int, lease: Double? = nil, observedAt: Date? = nil) -> HTTPResponse {
            let leaseMember = lease.map { ",\"leaseSeconds\":\($0)" } ?? ""
            return call(
                "PUT", "/v1/player/capture-state",
                body:
                    #"{"capturing":false,"seq":\#(seq),"observedAt":"\#(RFC3339.format(observedAt ?? Self.now))"\#(leaseMember)}"#
            )
        }
        #expect(report(1, lease: 3600).status == 422)
        #expect(report(2, lease: PlayerRoutes.maxLease + 1).status == 422)
        #expect(report(3, lease: PlayerRoutes.maxLease).status == 200)
        #expect(PlayerRoutes.maxLease <= 3 * GatewayConfiguration.defaultCaptureLease)
        let future = report(4, observedAt: Self.now.addingTimeInterval(400))
        #expect(future.status == 422 && future.problemCode == "implausible-observed-at")
        #expect(report(5, observedAt: Date(timeIntervalSince1970: -1)).status == 422)
        #expect(report(6, observedAt: Self.now.addingTimeInterval(-200)).status == 200)
        #expect(player.state.withLock { $0.calls.count } == 2)
    }
}
