import Foundation
import HTTPTestSupport
import Testing

/// Acceptance 3: capture state over Server-Sent Events, leases, and deny-keys-while-capturing.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayCaptureTests {
    func report(_ server: GatewayServer, session: String, token: String, capturing: Bool, seq: Int) throws
        -> RawResponse
    { try server.reportCapture(session: session, token: token, capturing: capturing, seq: seq) }

    /// Event streams on `session`: one for an operator (API token), then `clients` for the client
    /// itself (session token).
    func listeners(_ server: GatewayServer, session: String, token: String, admin: String, clients: Int = 1) throws
        -> [EventStreamReader]
    {
        let target = "/v1/sessions/\(session)/events"
        var streams = [
            try EventStreamReader(port: server.port, target: target, headers: [("Authorization", "Bearer \(admin)")])
        ]
        for _ in 0..<clients {
            streams.append(try EventStreamReader(port: server.port, target: target + "?token=\(token)"))
        }
        return streams
    }

    @Test func reportsTurnTheStreamCapturingOrClearAndGateTheKey() throws {
        // A lease far longer than the test, so every report holds until the next.
        let server = try GatewayServer(["--lease", "10m"])
        let (admin, clip, session, token) = try server.servingClip(denyKeysWhileCapturing: true)

        // Several listeners at once: an operator and the client itself (twice).
        let listeners = try listeners(server, session: session, token: token, admin: admin, clients: 2)
        for listener in listeners {
            #expect(listener.status == 200)
            #expect(listener.next("capture-state", containing: #""state":"unknown""#) != nil)
        }
        // Unknown, under deny-keys-while-capturing: no key.
        let unknown = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(unknown.status == 403 && unknown.json?["type"] as? String == "/problems/capture-unknown")

        #expect(try report(server, session: session, token: token, capturing: true, seq: 1).status == 200)
        for listener in listeners {
            #expect(listener.next("capture-state", containing: #""state":"capturing""#) != nil)
        }
        let capturing = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(capturing.status == 403 && capturing.json?["type"] as? String == "/problems/capture-active")

        // An out-of-order report changes nothing.
        let stale = try report(server, session: session, token: token, capturing: false, seq: 1)
        #expect(stale.json?["applied"] as? Bool == false)
        #expect(try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 403)

        #expect(try report(server, session: session, token: token, capturing: false, seq: 2).status == 200)
        #expect(listeners[1].next("capture-state", containing: #""state":"clear""#) != nil)
        let clear = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(clear.status == 200 && clear.body == clip.key)

        // Commands reach the client; revocation ends every stream.
        #expect(
            try server.call("POST", "/v1/sessions/\(session)/commands", token: admin, body: #"{"command":"stop"}"#)
                .status
                == 202)
        #expect(listeners[1].next("command", containing: "stop") != nil)
        #expect(try server.call("DELETE", "/v1/sessions/\(session)", token: admin).status == 204)
        for listener in listeners {
            #expect(listener.next("revoked") != nil, "\(listener.transcript)")
            #expect(listener.ended())
        }
        #expect(server.isUp)
    }

    /// On one node's SQLite store, as across nodes on PostgreSQL: revocations and changes of capture
    /// state carry their number in the session as an event ID, and a stream resumed with
    /// `Last-Event-ID` replays exactly what it missed, then the current state when that differs, then
    /// goes on live; after a restart too, which leaves every session `unknown`.
    @Test func aStreamResumedWithLastEventIDReplaysExactlyWhatItMissed() throws {
        let server = try GatewayServer(["--lease", "10m"])
        let (admin, _, session, token) = try server.servingClip()
        let target = "/v1/sessions/\(session)/events?token=\(token)"
        func report(capturing: Bool, seq: Int) throws {
            let response = try self.report(server, session: session, token: token, capturing: capturing, seq: seq)
            #expect(response.status == 200, "\(response.text)")
        }
        let capturing = #""state":"capturing""#
        let clear = #""state":"clear""#
        let unknown = #""state":"unknown""#

        // A fresh stream opens with the current state (no ID), then sees the change with ID 1.
        var first: EventStreamReader? = try EventStreamReader(port: server.port, target: target)
        let opening = first?.nextEvent(timeout: 5)
        #expect(opening?.id == nil && opening?.data.contains(unknown) == true, "\(String(describing: opening))")
        try report(capturing: true, seq: 1)
        let seen = try #require(first?.nextEvent(timeout: 5))
        #expect(seen.name == "capture-state" && seen.data.contains(capturing) && seen.id == "1", "\(seen)")
        first = nil

        // While the client is away: a change, a report that only renews the lease, another change.
        try report(capturing: false, seq: 2)
        try report(capturing: false, seq: 3)
        try report(capturing: true, seq: 4)

        // Resumed: exactly the two missed changes, in order, with their IDs (the renewal is no event),
        // and no opening state, since the last of them is the current one.
        let resumed = try EventStreamReader(port: server.port, target: target, headers: [("Last-Event-ID", "1")])
        #expect(resumed.status == 200)
        let replayed = resumed.events(quiet: 1.5)
        #expect(replayed.map(\.id) == ["2", "3"], "\(replayed)")
        #expect(replayed.count == 2 && replayed[0].data.contains(clear) && replayed[1].data.contains(capturing))

        // Then live: once, with the next ID.
        try report(capturing: false, seq: 5)
        let live = resumed.events(quiet: 1.5)
        #expect(live.map(\.id) == ["4"] && live.first?.data.contains(clear) == true, "\(live)")

        // Resumed with the newest ID: nothing replayed, only the current state, without an ID (the
        // client turned itself `unknown` while away). With no usable ID the stream starts afresh.
        let upToDate = try EventStreamReader(port: server.port, target: target, headers: [("Last-Event-ID", "4")])
        let current = upToDate.events(quiet: 1)
        #expect(current.map(\.id) == [nil] && current.first?.data.contains(clear) == true, "\(current)")
        let afresh = try EventStreamReader(port: server.port, target: target, headers: [("Last-Event-ID", "x")])
        let fresh = afresh.nextEvent(timeout: 5)
        #expect(fresh?.id == nil && fresh?.data.contains(clear) == true, "\(afresh.transcript)")

        // The events are in the database: after a restart a stream resumed with ID 2 gets 3 and 4, then
        // the state the restart left (`unknown`), and the numbering goes on.
        #expect(server.stop() == 0)
        try server.start()
        let restarted = try EventStreamReader(port: server.port, target: target, headers: [("Last-Event-ID", "2")])
        let afterRestart = restarted.events(quiet: 1.5)
        #expect(afterRestart.map(\.id) == ["3", "4", nil], "\(afterRestart)")
        #expect(afterRestart.last?.data.contains(unknown) == true, "\(afterRestart)")
        try report(capturing: true, seq: 6)
        #expect(restarted.nextEvent(timeout: 5)?.id == "5")
        #expect(try server.call("DELETE", "/v1/sessions/\(session)", token: admin).status == 204)
        let revoked = restarted.nextEvent(timeout: 5)
        #expect(revoked?.name == "revoked" && revoked?.id == "6", "\(restarted.transcript)")
    }

    @Test func aLapsedLeaseTurnsEveryStreamUnknownAndWithholdsTheKey() throws {
        let server = try GatewayServer(["--lease", "1s"])
        let (admin, clip, session, token) = try server.servingClip(denyKeysWhileCapturing: true)
        let listeners = try listeners(server, session: session, token: token, admin: admin)
        #expect(try report(server, session: session, token: token, capturing: false, seq: 1).status == 200)
        // No more reports: the lease lapses and every stream turns unknown, and stays so.
        for listener in listeners {
            #expect(
                listener.next("capture-state", containing: #""reason":"lease-lapsed""#, timeout: 30)?.contains(
                    #""state":"unknown""#) == true, "\(listener.transcript)")
        }
        let refused = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(refused.status == 403 && refused.json?["type"] as? String == "/problems/capture-unknown")
    }

    @Test func refusesEventStreamsAndReportsWithoutTheRightToken() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        let clip = try makeAESHLS(in: server.importRoot, name: "clip")
        try server.importAsset(clip, id: "clip", token: admin)
        let (session, _) = try server.session("clip", token: admin)
        let (_, otherToken) = try server.session("clip", token: admin)
        #expect(try EventStreamReader(port: server.port, target: "/v1/sessions/\(session)/events").status == 401)
        #expect(
            try EventStreamReader(port: server.port, target: "/v1/sessions/\(session)/events?token=\(otherToken)")
                .status
                == 401)
        #expect(try report(server, session: session, token: otherToken, capturing: false, seq: 1).status == 401)
    }
}
