import Foundation
import HTTPTestSupport
import PostgresTestSupport
import ProcessTestSupport
import Testing

/// Several `guard-play serve` processes on one PostgreSQL database (`--store`), as nodes behind a
/// load balancer: the state outlives a restart, any node serves any session, and revocations and
/// capture reports reach every node within a second.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayPostgresTests {
    /// A new database on the test process's cluster.
    func database() throws -> String { try PostgresCluster.shared.get().createDatabase() }

    func query(_ sql: String, _ url: String) throws -> String {
        try PostgresCluster.shared.get().query(sql, url: url)
    }

    @Test func keepsRowsAndKeysInPostgreSQLAcrossARestart() throws {
        let url = try database()
        let server = try GatewayServer(["--store", url])
        let (admin, clip, session, token) = try server.servingClip()
        #expect(try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").body == clip.key)
        // The state is in PostgreSQL, not in a SQLite file under --data.
        #expect(!FileManager.default.fileExists(atPath: server.database))
        #expect(try query("SELECT count(*) FROM sessions WHERE id = '\(session)'", url) == "1")
        #expect(try query("SELECT count(*) FROM api_tokens", url) == "1")
        // Wrapped: the stored key is not the key.
        let wrapped = try query("SELECT encode(wrapped, 'hex') FROM content_keys", url)
        #expect(wrapped.count == 2 * (12 + 16 + 16) && !wrapped.contains(clip.key.hexString))

        #expect(server.stop() == 0)
        try server.start()
        let key = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(key.status == 200 && key.body == clip.key)
        #expect(try server.call("GET", "/v1/sessions/\(session)", token: admin).status == 200)
        #expect(try server.call("GET", "/v1/assets/clip", token: admin).status == 200)
        // Audit rows reached the database too (written in batches, flushed at the stop).
        #expect(Int(try query("SELECT count(*) FROM audit WHERE action = 'key'", url)) ?? 0 >= 1)
    }

    @Test func refusesAStoreThatIsNeitherSQLiteNorAPostgreSQLURL() throws {
        for (arguments, environment) in [
            (["serve", "--store", "mysql://db/x", "--check-config"], [String: String]()),
            (["serve", "--check-config"], ["GUARDPLAY_STORE": "mysql://db/x"]),
            (["tokens", "list", "--store", "mysql://db/x"], [:]),
        ] {
            let result = try run(guardPlayBinary, arguments, environment: environment)
            #expect(result.status == 3, "\(arguments) \(result.stderr)")
            #expect(result.stderr.contains("'mysql://db/x' is neither 'sqlite' nor a postgres:// or postgresql:// URL"))
        }
        // A password in the URL is not repeated in messages.
        let secret = try run(guardPlayBinary, ["serve", "--store", "postgres://u:hunter2@db/x", "--check-config"])
        #expect(
            secret.status == 0 && secret.stdout.contains("postgres://u:***@db/x") && !secret.stdout.contains("hunter2"))
    }

    @Test func aNodeWithAnotherKEKRefusesToStart() throws {
        let url = try database()
        let first = try GatewayServer(["--store", url])
        _ = try first.token("admin")
        #expect {
            _ = try GatewayServer(
                ["--store", url], environment: ["GUARDPLAY_KEK": String(repeating: "17e3", count: 16)])
        } throws: { error in
            "\(error)".contains("exited 1")
                && "\(error)".contains(
                    "this node's key-encryption key is not the one the database's keys are wrapped under")
        }
    }

    @Test func aSessionMadeOnOneNodeGetsKeysAndPlaylistsFromAnother() throws {
        let url = try database()
        let node1 = try GatewayServer(["--store", url])
        let node2 = try GatewayServer(["--store", url])
        // Imported and the session made on node 1 after node 2 started: node 2 learns both from the
        // database.
        let (admin, clip, session, token) = try node1.servingClip()
        let key = try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(key.status == 200 && key.body == clip.key, "\(key.status) \(key.text) \(node2.log)")
        let master = try node2.call("GET", "/v1/hls/clip/master.m3u8?token=\(token)")
        #expect(master.status == 200 && master.text.contains("#EXTM3U"), "\(master.status) \(master.text)")
        #expect(try node2.call("GET", "/v1/sessions/\(session)", token: admin).status == 200)
        // And the API token made through node 1's store works on node 2.
        #expect(try node2.call("GET", "/v1/assets", token: admin).status == 200)
    }

    @Test func aRevocationOnOneNodeIsRefusedOnAnotherWithinASecond() throws {
        let url = try database()
        let node1 = try GatewayServer(["--store", url])
        let node2 = try GatewayServer(["--store", url])
        let (admin, clip, session, token) = try node1.servingClip()
        // Node 2 holds the session (and the key) in memory before the revocation.
        #expect(try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 200)

        #expect(try node1.call("DELETE", "/v1/sessions/\(session)", token: admin).status == 204)
        let revoked = Date()
        var last: RawResponse?
        let refused = eventually(timeout: 1) {
            last = try? node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
            return last?.status == 403
        }
        let elapsed = Date().timeIntervalSince(revoked)
        #expect(refused, "node 2 still answered \(last?.status ?? 0) after \(elapsed) s")
        #expect(last?.json?["type"] as? String == "/problems/session-revoked")
        #expect(elapsed < 1)
    }

    /// Node 2 runs before the slow revocation starts, or starts while it is open (after a newer event
    /// committed: the newest number it starts from is past the revocation's).
    @Test(arguments: [false, true]) func aRevocationCommittedAfterANewerEventStillReachesEveryNode(
        nodeStartsMeanwhile: Bool
    ) throws {
        let url = try database()
        let node1 = try GatewayServer(["--store", url, "--lease", "10m"])
        let running = nodeStartsMeanwhile ? nil : try GatewayServer(["--store", url, "--lease", "10m"])
        let (admin, clip, session, token) = try node1.servingClip()
        let (other, otherToken) = try node1.session("clip", token: admin)
        if let running {
            // Node 2 holds both sessions and the key.
            #expect(try running.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 200)
            #expect(try running.call("GET", "/v1/sessions/\(other)", token: admin).status == 200)
        }

        // A node revokes `session`: its event takes its number, and the commit is slow (4 s).
        let scratch = try TemporaryDirectory()
        let output = scratch.url.path + "/psql.out"
        let slow = try PostgresCluster.shared.get().startQuery(
            """
            BEGIN;
            UPDATE sessions SET revoked_at = extract(epoch FROM now()) WHERE id = '\(session)';
            WITH next AS (
                UPDATE sessions SET event_seq = event_seq + 1 WHERE id = '\(session)' RETURNING id, event_seq)
            INSERT INTO session_events (session_id, session_seq, kind, at, origin)
                SELECT id, event_seq, 'revoked', extract(epoch FROM now()), 'slow-node' FROM next;
            SELECT pg_notify('guardplay_events', '');
            SELECT pg_sleep(4);
            COMMIT;
            """, url: url, output: output)
        #expect(
            eventually(timeout: 5) {
                (try? query("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'", url)) == "1"
            })
        // Meanwhile a newer event, a capture report for the other session, commits and node 2 reads it.
        #expect(try node1.reportCapture(session: other, token: otherToken, capturing: true, seq: 1).status == 200)
        let node2 = try running ?? GatewayServer(["--store", url, "--lease", "10m"])
        #expect(
            eventually(timeout: 2) {
                (try? node2.call("GET", "/v1/sessions/\(other)", token: admin).text)?.contains(#""state":"capturing""#)
                    == true
            })
        #expect(try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 200)

        // The revocation commits after the event numbered past it, and still reaches node 2 in time.
        #expect(slow.wait(timeout: 10) == 0, "\((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
        let committed = Date()
        var last: RawResponse?
        let refused = eventually(timeout: 1) {
            last = try? node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
            return last?.status == 403
        }
        #expect(
            refused,
            "node 2 still answered \(last?.status ?? 0) \(Date().timeIntervalSince(committed)) s after the commit")
        #expect(last?.json?["type"] as? String == "/problems/session-revoked")
    }

    @Test func aCaptureReportToOneNodeReachesAnEventStreamOnAnotherWithinASecond() throws {
        let url = try database()
        let node1 = try GatewayServer(["--store", url, "--lease", "10m"])
        let node2 = try GatewayServer(["--store", url, "--lease", "10m"])
        let node3 = try GatewayServer(["--store", url, "--lease", "10m"])
        let (admin, clip, session, token) = try node1.servingClip(denyKeysWhileCapturing: true)
        let stream = try EventStreamReader(port: node3.port, target: "/v1/sessions/\(session)/events?token=\(token)")
        #expect(stream.status == 200)
        #expect(stream.next("capture-state", containing: #""state":"unknown""#) != nil)

        let body = #"{"capturing":true,"seq":1,"observedAt":"\#(ISO8601DateFormatter().string(from: Date()))"}"#
        let report = try node2.call("PUT", "/v1/sessions/\(session)/capture-state?token=\(token)", body: body)
        #expect(report.status == 200, "\(report.text)")
        let reported = Date()
        let event = stream.next("capture-state", containing: #""state":"capturing""#, timeout: 1)
        #expect(event != nil, "\(stream.transcript)")
        #expect(Date().timeIntervalSince(reported) < 1)
        // Node 3 now refuses the key as the reporting node does.
        let key = try node3.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(key.status == 403 && key.json?["type"] as? String == "/problems/capture-active")

        // A revocation on node 1 ends node 3's stream.
        #expect(try node1.call("DELETE", "/v1/sessions/\(session)", token: admin).status == 204)
        #expect(stream.next("revoked", timeout: 1) != nil, "\(stream.transcript)")
    }

    @Test func aNodeThatFirstSeesASessionStartsItInItsLastReportedCaptureStateWhileTheLeaseHolds() throws {
        let url = try database()
        let node1 = try GatewayServer(["--store", url, "--lease", "10m"])
        let node2 = try GatewayServer(["--store", url, "--lease", "10m"])
        let (admin, clip, reported, reportedToken) = try node1.servingClip(denyKeysWhileCapturing: true)
        let (silent, silentToken) = try node1.session("clip", token: admin)
        // Two reports to node 1 (the second one is what holds); node 2 has never seen the session.
        #expect(try node1.reportCapture(session: reported, token: reportedToken, capturing: true, seq: 1).status == 200)
        #expect(
            try node1.reportCapture(session: reported, token: reportedToken, capturing: false, seq: 2).status == 200)
        let state = { (node: GatewayServer, session: String) -> String? in
            let response = try? node.call("GET", "/v1/sessions/\(session)", token: admin)
            return (response?.json?["capture"] as? [String: Any])?["state"] as? String
        }
        let key = try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(reportedToken)")
        #expect(key.status == 200 && key.body == clip.key, "\(key.status) \(key.text)")
        #expect(state(node2, reported) == "clear")
        // Its last report's sequence number came along: an older report to node 2 changes nothing.
        let old = try node2.reportCapture(session: reported, token: reportedToken, capturing: true, seq: 1)
        #expect(old.status == 200 && state(node2, reported) == "clear", "\(old.text)")
        // A session with no report starts unknown, and its key is refused.
        let refused = try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(silentToken)")
        #expect(refused.status == 403 && refused.json?["type"] as? String == "/problems/capture-unknown")
        #expect(state(node2, silent) == "unknown")

        // A node that starts later loads the state with the sessions; with its 1-second lease, a report
        // it takes lapses, and a node that first sees that session then starts it unknown.
        let node3 = try GatewayServer(["--store", url, "--lease", "1s"])
        #expect(state(node3, reported) == "clear")
        let (lapsing, lapsingToken) = try node1.session("clip", token: admin)
        #expect(try node3.reportCapture(session: lapsing, token: lapsingToken, capturing: false, seq: 1).status == 200)
        let lapsed = eventually(timeout: 30) {
            (try? query(
                "SELECT count(*) FROM session_events WHERE session_id = '\(lapsing)' "
                    + "AND lease_expires_at < extract(epoch FROM now())", url)) == "1"
        }
        #expect(lapsed)
        let afterLapse = try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(lapsingToken)")
        #expect(afterLapse.status == 403 && afterLapse.json?["type"] as? String == "/problems/capture-unknown")
        #expect(state(node2, lapsing) == "unknown")
    }

    @Test func aKeyPolicySetOnOneNodeHoldsOnAnotherWithinASecond() throws {
        let url = try database()
        let node1 = try GatewayServer(["--store", url, "--lease", "10m"])
        let node2 = try GatewayServer(["--store", url, "--lease", "10m"])
        let (admin, clip, session, token) = try node1.servingClip(denyKeysWhileCapturing: false)
        // Node 2 holds the session and the key before the report and the change.
        #expect(try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 200)
        let observed = ISO8601DateFormatter().string(from: Date())
        let report = try node1.call(
            "PUT", "/v1/sessions/\(session)/capture-state?token=\(token)",
            body: #"{"capturing":true,"seq":1,"observedAt":"\#(observed)"}"#)
        #expect(report.status == 200, "\(report.text)")
        // Node 2 holds the asset, with its policy, and grants the key while the session captures.
        #expect(
            eventually(timeout: 5) {
                (try? node2.call("GET", "/v1/sessions/\(session)", token: admin).text)?.contains(
                    #""state":"capturing""#) == true
            })
        #expect(try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 200)

        let policy = try node1.call(
            "PUT", "/v1/assets/clip/policy", token: admin, body: #"{"denyKeysWhileCapturing":true}"#)
        #expect(policy.status == 200, "\(policy.text)")
        let changed = Date()
        var last: RawResponse?
        let refused = eventually(timeout: 1) {
            last = try? node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
            return last?.status == 403
        }
        #expect(refused, "node 2 still answered \(last?.status ?? 0) after \(Date().timeIntervalSince(changed)) s")
        #expect(last?.json?["type"] as? String == "/problems/capture-active")
        #expect(
            (try node2.call("GET", "/v1/assets/clip", token: admin).json?["denyKeysWhileCapturing"]) as? Bool == true)
    }

    @Test func aStreamResumedOnAnotherNodeWithLastEventIDReplaysExactlyWhatItMissed() throws {
        let url = try database()
        let node1 = try GatewayServer(["--store", url, "--lease", "10m"])
        let node2 = try GatewayServer(["--store", url, "--lease", "10m"])
        let (_, _, session, token) = try node1.servingClip()
        let target = "/v1/sessions/\(session)/events?token=\(token)"
        func report(_ node: GatewayServer, capturing: Bool, seq: Int) throws {
            let observed = ISO8601DateFormatter().string(from: Date())
            let response = try node.call(
                "PUT", "/v1/sessions/\(session)/capture-state?token=\(token)",
                body: #"{"capturing":\#(capturing),"seq":\#(seq),"observedAt":"\#(observed)"}"#)
            #expect(response.status == 200, "\(response.text)")
        }
        let capturing = #""state":"capturing""#
        let clear = #""state":"clear""#

        // A stream on node 1 sees the first change with its ID, the change's number in the session.
        var first: EventStreamReader? = try EventStreamReader(port: node1.port, target: target)
        #expect(first?.next("capture-state", containing: #""state":"unknown""#) != nil)
        try report(node1, capturing: true, seq: 1)
        let seen = try #require(first?.nextEvent(timeout: 5))
        #expect(seen.name == "capture-state" && seen.data.contains(capturing) && seen.id == "1", "\(seen)")
        first = nil

        // While the client is away: a change on node 2, a report on node 1 that only renews the lease
        // (no event), and another change on node 2.
        try report(node2, capturing: false, seq: 2)
        try report(node1, capturing: false, seq: 3)
        try report(node2, capturing: true, seq: 4)

        // Resumed on node 2: exactly the two missed changes, in order, with their IDs; no opening state.
        let resumed = try EventStreamReader(port: node2.port, target: target, headers: [("Last-Event-ID", "1")])
        #expect(resumed.status == 200)
        let replayed = resumed.events(quiet: 1.5)
        #expect(replayed.map(\.id) == ["2", "4"], "\(replayed)")
        #expect(replayed.count == 2 && replayed[0].data.contains(clear) && replayed[1].data.contains(capturing))
        #expect(replayed.allSatisfy { $0.name == "capture-state" && $0.data.contains(#""reason":"reported""#) })

        // Then live, from a report to node 1: once, with the next ID.
        try report(node1, capturing: false, seq: 5)
        let live = resumed.events(quiet: 1.5)
        #expect(live.map(\.id) == ["5"] && live.first?.data.contains(clear) == true, "\(live)")

        // A resumed stream whose ID is the newest gets no stored event, only the current state without
        // an ID (its client turned itself `unknown` while away); one with no usable ID starts afresh
        // with the current state.
        let upToDate = try EventStreamReader(port: node1.port, target: target, headers: [("Last-Event-ID", "5")])
        let current = upToDate.events(quiet: 1)
        #expect(current.map(\.id) == [nil] && current.first?.data.contains(clear) == true, "\(current)")
        let afresh = try EventStreamReader(port: node1.port, target: target, headers: [("Last-Event-ID", "x")])
        let opening = afresh.nextEvent(timeout: 5)
        #expect(opening?.id == nil && opening?.data.contains(clear) == true, "\(afresh.transcript)")
    }

    @Test func aJobWhoseNodeIsKilledFinishesOnAnotherWithTheSameKey() throws {
        let url = try database()
        let lease = ["--store", url, "--job-lease", "3s"]
        let node1 = try GatewayServer(lease)
        // The nodes share the data directory (where job outputs go) and the input root, as storage
        // every node reads.
        let node2 = try GatewayServer(lease + ["--data", node1.dataDirectory, "--input-root", node1.inputRoot])
        let admin = try node1.token("admin")
        try node1.makeLongInput()
        let job = try node1.submitJob(token: admin, input: "long.mp4", asset: "long")

        // Whichever node claims it is killed once the job's key is stored; the other runs on.
        var claimer: GatewayServer?
        _ = eventually(timeout: 60) {
            claimer = [node1, node2].first { $0.log.contains("jobs: \(job) claimed (attempt 1)") }
            return claimer != nil
        }
        let first = try #require(claimer, "no node claimed \(job): \(node1.log) \(node2.log)")
        let survivor = first === node1 ? node2 : node1
        let keyRow =
            "SELECT encode(wrapped, 'hex') FROM content_keys WHERE kid = "
            + "(SELECT kid FROM packaging_jobs WHERE id = '\(job)')"
        var wrapped = ""
        _ = eventually(timeout: 60) {
            wrapped = (try? query(keyRow, url)) ?? ""
            return !wrapped.isEmpty
        }
        #expect(!wrapped.isEmpty)
        #expect(try query("SELECT state FROM packaging_jobs WHERE id = '\(job)'", url) == "running")
        // The first attempt's partial output, beside where its output would go; and, which no cleanup
        // of this job may touch, a finished output of it and another job's partial output.
        let assets = node1.dataDirectory + "/assets"
        let partials = { () -> [String] in
            ((try? FileManager.default.contentsOfDirectory(atPath: assets)) ?? []).filter {
                $0.hasPrefix(".\(job)-1.guard-play-") && $0.hasSuffix(".partial")
            }
        }
        _ = eventually(timeout: 60) { !partials().isEmpty }
        #expect(!partials().isEmpty, "no partial output of attempt 1 in \(assets)")
        let keep = ["\(assets)/\(job)-0", "\(assets)/.job_other-1.guard-play-1-ab.partial"]
        for path in keep {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try Data("kept".utf8).write(to: URL(fileURLWithPath: path + "/file"))
        }
        first.kill9()

        // The survivor takes the job over once its lease lapses by the database's clock, without a
        // restart, and finishes it with the key the first attempt stored.
        let finished = try survivor.pollJob(job, token: admin, timeout: 120) {
            ["succeeded", "failed"].contains($0["state"] as? String)
        }
        #expect(finished?["state"] as? String == "succeeded", "\(String(describing: finished)) \(survivor.log)")
        #expect(finished?["attempts"] as? Int == 2)
        #expect(survivor.log.contains("jobs: \(job) claimed (attempt 2)"), "\(survivor.log)")
        // The survivor removed the dead node's partial output when it requeued the job, with no node
        // restarted, and nothing else.
        #expect(partials().isEmpty, "\(partials()) left in \(assets)")
        #expect(survivor.log.contains("the partial output of \(job)'s interrupted attempt 1"), "\(survivor.log)")
        for path in keep { #expect(fileText(path + "/file") == "kept", "\(path)") }
        #expect(try query(keyRow, url) == wrapped, "the key was replaced")
        #expect(try query("SELECT count(*) FROM content_keys", url) == "1")

        // Its output plays through the survivor with that key.
        let (_, token) = try survivor.session("long", token: admin)
        let played = try run(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-loglevel", "error", "-i",
                "http://127.0.0.1:\(survivor.port)/v1/hls/long/master.m3u8?token=\(token)", "-t", "2", "-f", "null",
                "-",
            ])
        #expect(played.status == 0, "\(played.stderr)")
    }

    @Test func ffmpegPlaysAStreamWhosePlaylistsKeysAndSegmentsComeFromDifferentNodesThroughNginx() throws {
        let url = try database()
        let node1 = try GatewayServer(["--store", url])
        // The other nodes share node 1's data directory and import root, as storage every node reads.
        let shared = ["--store", url, "--data", node1.dataDirectory, "--import-root", node1.importRoot]
        let node2 = try GatewayServer(shared)
        let node3 = try GatewayServer(shared)
        let (_, _, _, token) = try node1.servingClip()
        let nodes = [node1, node2, node3]
        let nginx = try NginxFront(upstreamPorts: nodes.map(\.port))
        #expect(nginx.syntaxCheck.status == 0, "\(nginx.syntaxCheck.stderr)")
        try nginx.start()
        defer { nginx.stop() }

        let played = try run(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-loglevel", "error", "-i", nginx.url("/v1/hls/clip/master.m3u8?token=\(token)"), "-f",
                "null", "-",
            ])
        #expect(played.status == 0, "\(played.stderr)")

        // nginx's access log names the node that answered each request: playlists, the key and the
        // segments came from several, and every node served some.
        var servedBy: [String: Set<String>] = [:]
        _ = eventually(timeout: 10) {
            servedBy = [:]
            for line in fileText(nginx.accessLog).split(separator: "\n")
            where line.contains("/v1/hls/") || line.contains("/v1/keys/") {
                guard let upstream = line.components(separatedBy: "upstream=").last?.split(separator: "/").first,
                    upstream.hasPrefix("127.0.0.1:")
                else { continue }
                let kind = line.contains("/v1/keys/") ? "key" : line.contains(".m3u8") ? "playlist" : "segment"
                servedBy[kind, default: []].insert(String(upstream))
            }
            return servedBy["segment"] != nil && servedBy["key"] != nil
        }
        #expect(Set(servedBy.keys) == ["playlist", "key", "segment"], "\(fileText(nginx.accessLog))")
        let all = servedBy.values.reduce(Set<String>()) { $0.union($1) }
        #expect(all == Set(nodes.map { "127.0.0.1:\($0.port)" }), "\(servedBy)")
        #expect(servedBy["playlist"].map { $0.count >= 2 } == true, "\(servedBy)")
        #expect(servedBy["segment"].map { $0.count >= 2 } == true, "\(servedBy)")
    }

    @Test func aRestartOfPostgreSQLUnderLoadCostsOnlyDocumented503sAndNoCommittedRow() throws {
        // A cluster of its own, since this test restarts it.
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let url = try cluster.createDatabase()
        let node1 = try GatewayServer(["--store", url])
        let node2 = try GatewayServer(["--store", url])
        let (admin, clip, _, token) = try node1.servingClip()
        #expect(try node2.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 200)

        // wrk tallies every status it sees (a 503 without Retry-After apart) and prints them at the end.
        let script = node1.directory.path("statuses.lua")
        try """
        local threads = {}
        function setup(thread) table.insert(threads, thread) end
        function init(args) statuses = {} end
        function response(status, headers, body)
          local key = tostring(status)
          if status == 503 and headers["Retry-After"] == nil then key = "503-without-retry-after" end
          statuses[key] = (statuses[key] or 0) + 1
        end
        function done(summary, latency, requests)
          for _, thread in ipairs(threads) do
            for key, count in pairs(thread:get("statuses")) do io.write("status " .. key .. " " .. count .. "\\n") end
          end
        end
        """.write(toFile: script, atomically: true, encoding: .utf8)
        // Bounded load: cached keys on both nodes, and a request that needs the database on each.
        let loads = [
            (node1, "/v1/keys/\(clip.kid)?token=\(token)", [String]()),
            (node2, "/v1/keys/\(clip.kid)?token=\(token)", []),
            (node1, "/v1/packaging-jobs", ["-H", "Authorization: Bearer \(admin)"]),
            (node2, "/v1/packaging-jobs", ["-H", "Authorization: Bearer \(admin)"]),
        ]
        let wrks = try loads.enumerated().map { index, load in
            let output = node1.directory.path("wrk-\(index).out")
            let process = try SpawnedProcess(
                ["/usr/bin/wrk", "-t", "1", "-c", "4", "-d", "8s", "-s", script] + load.2
                    + ["http://127.0.0.1:\(load.0.port)\(load.1)"],
                output: output, errors: output)
            return (process, output)
        }
        // Sessions made while it runs: each one answered 201 must be in the database afterwards.
        var created: [String] = []
        var refused: [Int] = []
        func createSession(on node: GatewayServer) {
            guard let response = try? node.call("POST", "/v1/sessions", token: admin, body: #"{"asset":"clip"}"#)
            else { return }
            if response.status == 201, let id = response.json?["id"] as? String {
                created.append(id)
            } else {
                refused.append(response.status)
                #expect(response.status == 503 && response.header("Retry-After") != nil, "\(response.text)")
            }
        }
        let loadStarted = Date()
        while Date().timeIntervalSince(loadStarted) < 1.5 { createSession(on: node1) }
        try cluster.restart()
        let back = Date()
        for node in [node1, node2] {
            #expect(eventually(timeout: 5) { (try? node.call("GET", "/readyz").status) == 200 }, "\(node.log)")
            #expect(
                eventually(timeout: 5) {
                    (try? node.call("POST", "/v1/sessions", token: admin, body: #"{"asset":"clip"}"#))?.status == 201
                })
        }
        #expect(Date().timeIntervalSince(back) < 5 * 2)
        while Date().timeIntervalSince(loadStarted) < 6 { createSession(on: node2) }

        for (index, (process, output)) in wrks.enumerated() {
            #expect(process.wait(timeout: 30) == 0, "\(fileText(output))")
            var statuses: [String: Int] = [:]
            for line in fileText(output).split(separator: "\n") where line.hasPrefix("status ") {
                let fields = line.split(separator: " ")
                statuses[String(fields[1]), default: 0] += Int(fields[2]) ?? 0
            }
            if index < 2 {
                // Cached keys for a valid token never need the database.
                #expect(Set(statuses.keys) == ["200"] && statuses["200", default: 0] > 0, "\(statuses)")
            } else {
                // What needs it is served or refused with 503 and Retry-After, never a 500.
                #expect(
                    Set(statuses.keys).isSubset(of: ["200", "503"]) && statuses["200", default: 0] > 0, "\(statuses)")
            }
        }
        #expect(!created.isEmpty, "no session was created under load: \(refused)")
        let stored = Set(
            try cluster.query("SELECT id FROM sessions", url: url).split(separator: "\n").map(String.init))
        #expect(Set(created).isSubset(of: stored), "lost: \(Set(created).subtracting(stored))")
        #expect(node1.isRunning && node2.isRunning)
    }

    @Test func servesCachedKeysThroughADatabaseOutageAnswers503ForTheRestAndReconnects() throws {
        // A cluster of its own, since this test stops it.
        let cluster = try PostgresCluster()
        defer { cluster.remove() }
        let url = try cluster.createDatabase()
        let server = try GatewayServer(["--store", url])
        let (admin, clip, _, token) = try server.servingClip()
        #expect(try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)").status == 200)
        #expect(try server.call("GET", "/readyz").status == 200)

        try cluster.stop()
        // A cached key for a valid token needs no database.
        let key = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(key.status == 200 && key.body == clip.key, "\(key.status) \(key.text)")
        // What needs it is a 503 problem with Retry-After, never a 500 or a hang.
        let create = try server.call("POST", "/v1/sessions", token: admin, body: #"{"asset":"clip"}"#)
        #expect(create.status == 503, "\(create.status) \(create.text)")
        #expect(create.header("Retry-After") == "2")
        #expect(create.header("Content-Type")?.hasPrefix("application/problem+json") == true)
        #expect(create.text.contains("storage-unavailable"))
        #expect(eventually(timeout: 5) { (try? server.call("GET", "/readyz").status) == 503 })

        try cluster.start()
        let back = Date()
        #expect(eventually(timeout: 5) { (try? server.call("GET", "/readyz").status) == 200 }, "\(server.log)")
        #expect(Date().timeIntervalSince(back) < 5)
        let again = try server.call("POST", "/v1/sessions", token: admin, body: #"{"asset":"clip"}"#)
        #expect(again.status == 201, "\(again.status) \(again.text)")
        #expect(server.isRunning)
    }
}
