import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Synchronization
import Testing

/// Acceptance 5 (restarts), for the parts that need no packager: the store survives `kill -9` under
/// load, keys still decrypt, and sessions and tokens are kept.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayRestartTests {
    @Test func survivesKill9UnderLoadWithKeysSessionsAndAuditIntact() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        let clip = try makeAESHLS(in: server.importRoot, name: "clip")
        try server.importAsset(clip, id: "clip", token: admin)
        let (session, token) = try server.session("clip", token: admin)
        let port = server.port

        // Load: sessions being created and keys fetched from two threads while the process dies.
        let created = Mutex([String]())
        let stop = Mutex(false)
        let done = DispatchGroup()
        for worker in 0..<2 {
            done.enter()
            Thread {
                defer { done.leave() }
                while !stop.withLock({ $0 }) {
                    if worker == 0 {
                        let response = try? exchange(
                            port: port, "POST", "/v1/sessions",
                            headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
                            body: #"{"asset":"clip"}"#, timeout: 2)
                        if response?.status == 201, let id = response?.json?["id"] as? String {
                            created.withLock { $0.append(id) }
                        }
                    } else {
                        _ = try? exchange(port: port, "GET", "/v1/keys/\(clip.kid)?token=\(token)", timeout: 2)
                    }
                }
            }.start()
        }
        // Killed once the server has acknowledged a few sessions and stored audit rows for key grants
        // (they are written in batches), while the load goes on.
        let enough = eventually(timeout: 60) { created.withLock { $0.count } >= 10 }
        let auditedBefore = eventually(timeout: 60) {
            (Int((try? server.query("SELECT count(*) FROM audit WHERE action = 'key'")) ?? "") ?? 0) > 0
        }
        server.kill9()
        stop.withLock { $0 = true }
        // Each request has a 2 s read deadline, so the workers notice the stop within seconds.
        #expect(done.wait(timeout: .now() + 60) == .success, "the load threads did not stop")
        let acknowledged = created.withLock { $0 }
        #expect(enough, "only \(acknowledged.count) sessions were acknowledged in 60 s")
        #expect(auditedBefore, "no key grant was audited in 60 s")

        #expect(try server.query("PRAGMA integrity_check") == "ok")

        try server.start()
        // The content key still unwraps under the KEK, and the old session still plays.
        let key = try server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
        #expect(key.status == 200 && key.body == clip.key)
        // Every session the server acknowledged before dying is still there.
        for id in acknowledged {
            #expect(try server.call("GET", "/v1/sessions/\(id)", token: admin).status == 200, "\(id) was lost")
        }
        #expect(try server.call("GET", "/v1/sessions/\(session)", token: admin).status == 200)
        // The API token survived too (it authorised the calls above). The audit log kept the rows stored
        // before the kill and gained the grant after the restart.
        #expect(server.stop() == 0)
        #expect((Int(try server.query("SELECT count(*) FROM audit WHERE action = 'key'")) ?? 0) > 1)
    }

    @Test func createsAPrivateKEKFileOnFirstStartAndKeepsUsingIt() throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let imports = directory.path("imports")
        try FileManager.default.createDirectory(atPath: imports, withIntermediateDirectories: true)
        let token = try guardPlay(["tokens", "create", "--scope", "admin", "--data", data])
        #expect(token.status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: data + "/kek")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let kek = try String(contentsOfFile: data + "/kek", encoding: .utf8)
        let database = try Data(contentsOf: URL(fileURLWithPath: data + "/guardplay.db"))
        #expect(database.range(of: Data(kek.trimmingCharacters(in: .whitespacesAndNewlines).utf8)) == nil)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: data + "/kek")
        let refused = try guardPlay(["serve", "--data", data, "--listen", "127.0.0.1:0"], timeout: 30)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("readable by others"))
    }
}
