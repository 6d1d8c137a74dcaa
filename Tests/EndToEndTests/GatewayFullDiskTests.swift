import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// Issue 9 §2 on a real full disk: the gateway's `--data` on a 4 MiB tmpfs, filled to its last block
/// while the gateway runs. Mounting needs root, as CI and the developers' machines run the tests.
@Suite(.serialized, .timeLimit(.minutes(30))) struct GatewayFullDiskTests {
    @Test func aFullDiskRefusesNewSessionsWith503AndStillGrantsKeysToValidOnes() throws {
        try #require(getuid() == 0, "mounting a tmpfs needs root")
        let mountPoint = try TemporaryDirectory()
        let mounted = try run(
            "/usr/bin/mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mountPoint.url.path])
        try #require(mounted.status == 0, "mount: \(mounted.stderr)")
        defer { _ = try? run("/usr/bin/umount", ["--lazy", mountPoint.url.path]) }
        let server = try GatewayServer(["--data", mountPoint.path("data")])
        let (admin, clip, _, token) = try server.servingClip()
        #expect(try server.call("POST", "/v1/sessions", token: admin, body: #"{"asset":"clip"}"#).status == 201)

        // Fill the disk: write until the kernel says ENOSPC.
        let fill = mountPoint.path("fill")
        let descriptor = open(fill, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(descriptor >= 0)
        let block = [UInt8](repeating: 0, count: 4096)
        var written = 0
        while true {
            let count = block.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            written += count
        }
        let full = errno
        close(descriptor)
        try #require(full == ENOSPC, "filling stopped with \(String(cString: strerror(full))) after \(written) bytes")

        // A new session cannot be stored: 503 with its own code, not a 500.
        let refused = try server.call("POST", "/v1/sessions", token: admin, body: #"{"asset":"clip"}"#)
        #expect(refused.status == 503, "\(refused.status) \(refused.text)")
        #expect(refused.text.contains("storage-full"), "\(refused.text)")
        // The session that already holds a token keeps getting its key, and the audit log's failure
        // shows in /readyz (its batches cannot be written once the log needs a new page).
        var notReady: RawResponse?
        let sawNotReady = eventually(timeout: 20) {
            let key = try? server.call("GET", "/v1/keys/\(clip.kid)?token=\(token)")
            #expect(key?.status == 200 && key?.body == clip.key, "key answered \(key?.status ?? 0)")
            notReady = try? server.call("GET", "/readyz")
            return notReady?.status == 503
        }
        #expect(sawNotReady, "readyz stayed \(notReady?.status ?? 0)")
        #expect(notReady?.text.contains("full") == true, "\(notReady?.text ?? "")")
        #expect(server.isUp)

        // Space freed: ready again, and sessions are created again.
        #expect(unlink(fill) == 0)
        #expect(eventually(timeout: 20) { (try? server.call("GET", "/readyz").status) == 200 })
        #expect(try server.call("POST", "/v1/sessions", token: admin, body: #"{"asset":"clip"}"#).status == 201)
        #expect(!server.log.contains("internal error"), "\(server.log)")
    }
}
