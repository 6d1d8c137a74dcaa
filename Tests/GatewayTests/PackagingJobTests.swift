import Foundation
import Gateway
import Store
import Synchronization
import Testing

/// A packager stand-in: writes a tiny HLS tree naming the key URI it was given beside the output and
/// renames it into place (as the packager does), optionally holding until released (watching for
/// cancellation meanwhile) or failing.
final class FakeEngine: PackagingEngine {
    struct State {
        var calls: [PackagingWork] = []
        var hold = false
        var failWith: String?
    }

    let state = Mutex(State())

    func package(
        _ work: PackagingWork, progress: @escaping @Sendable (Double) -> Void,
        isCancelled: @escaping @Sendable () -> Bool
    ) throws(PackagingFailure) -> PackagingOutcome {
        state.withLock { $0.calls.append(work) }
        progress(0.5)
        while state.withLock({ $0.hold }) {
            if isCancelled() { throw PackagingFailure("cancelled", cancelled: true) }
            usleep(5_000)
        }
        if let message = state.withLock({ $0.failWith }) { throw PackagingFailure(message) }
        let files = [
            "master.m3u8": "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nmedia.m3u8\n",
            "media.m3u8":
                "#EXTM3U\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"\(work.keyURI)\"\n#EXTINF:6,\nseg0.ts\n#EXT-X-ENDLIST\n",
            "seg0.ts": "segment",
        ]
        let building = work.outputDirectory + ".building"
        guard (try? FileManager.default.createDirectory(atPath: building, withIntermediateDirectories: false)) != nil
        else { throw PackagingFailure("could not create \(building)") }
        for (name, text) in files {
            guard (try? Data(text.utf8).write(to: URL(fileURLWithPath: building + "/" + name))) != nil else {
                throw PackagingFailure("could not write \(name)")
            }
        }
        guard rename(building, work.outputDirectory) == 0 else { throw PackagingFailure("could not rename") }
        progress(1)
        return PackagingOutcome(keys: [PackagedKey(kid: work.kid, key: work.key)], container: "ts")
    }

    var calls: [PackagingWork] { state.withLock { $0.calls } }
    func hold(_ on: Bool) { state.withLock { $0.hold = on } }
}

/// Waits (bounded) for `condition`; the work happens on the gateway's worker threads.
func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
    for _ in 0..<500 {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}

@Suite struct PackagingJobTests {
    func fixture(engine: FakeEngine) throws -> GatewayFixture {
        let fixture = try GatewayFixture(engine: engine)
        try fixture.scratch.write("inputs/media/clip.mp4", "not really media")
        return fixture
    }

    @Test func packagesAnInputAndServesTheAssetWithItsKey() throws {
        let engine = FakeEngine()
        let fixture = try fixture(engine: engine)
        try fixture.gateway.start()
        defer { fixture.gateway.stop() }
        let (job, created) = try fixture.gateway.jobs.submit(
            input: "media/clip.mp4", asset: "movie", denyKeysWhileCapturing: true, idempotencyKey: "k1")
        #expect(created && job.state == .queued && job.kid?.count == 32)
        #expect(try eventually { try fixture.gateway.jobs.job(job.id)?.state == .succeeded })
        let done = try #require(try fixture.gateway.jobs.job(job.id))
        #expect(done.progress == 1 && done.attempts == 1)
        #expect(engine.calls.first?.keyURI == "/v1/keys/\(job.kid!)")
        #expect(engine.calls.first?.input.hasSuffix("/inputs/media/clip.mp4") == true)

        let asset = try #require(fixture.gateway.asset("movie"))
        #expect(asset.denyKeysWhileCapturing && asset.kids == [job.kid!] && asset.master == "master.m3u8")
        #expect(done.output.map { $0.hasSuffix("/\(job.id)-1") && FileManager.default.fileExists(atPath: $0) } == true)
        let (session, token) = try fixture.gateway.createSession(asset: "movie", ttl: nil)
        _ = try fixture.gateway.reportCapture(
            session: session.id, capturing: false, seq: 1, observedAt: fixture.clock.now())
        guard case .success(let key) = fixture.gateway.deliverKey(kid: job.kid!, token: token, remote: "") else {
            Issue.record("the job's key was not delivered")
            return
        }
        #expect(try fixture.store.keys().first { $0.kid == job.kid }?.key == key)

        // The same Idempotency-Key and body give the same job; a different body is refused.
        let again = try fixture.gateway.jobs.submit(
            input: "media/clip.mp4", asset: "movie", denyKeysWhileCapturing: true, idempotencyKey: "k1")
        #expect(again.job.id == job.id && !again.created)
        #expect(throws: GatewayError.self) {
            _ = try fixture.gateway.jobs.submit(
                input: "media/clip.mp4", asset: "other", denyKeysWhileCapturing: true, idempotencyKey: "k1")
        }
    }

    @Test func cancelsARunningJobAndLeavesNoOutput() throws {
        let engine = FakeEngine()
        engine.hold(true)
        let fixture = try fixture(engine: engine)
        try fixture.gateway.start()
        defer { fixture.gateway.stop() }
        let (job, _) = try fixture.gateway.jobs.submit(
            input: "media/clip.mp4", asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil)
        #expect(try eventually { try fixture.gateway.jobs.job(job.id)?.progress == 0.5 })
        #expect(try fixture.gateway.jobs.cancel(job.id)?.state == .cancelled)
        #expect(throws: GatewayError.self) { _ = try fixture.gateway.jobs.cancel(job.id) }
        #expect(
            eventually {
                engine.calls.count == 1 && fixture.gateway.metrics.render().contains("state=\"cancelled\"} 1")
            })
        let assets = fixture.scratch.path + "/data/assets"
        #expect(eventually { ((try? FileManager.default.contentsOfDirectory(atPath: assets)) ?? []).isEmpty })
        #expect(fixture.gateway.asset("movie") == nil)
    }

    @Test func marksAFailedRunFailedWithTheReason() throws {
        let engine = FakeEngine()
        engine.state.withLock { $0.failWith = "the input has no video" }
        let fixture = try fixture(engine: engine)
        try fixture.gateway.start()
        defer { fixture.gateway.stop() }
        let (job, _) = try fixture.gateway.jobs.submit(
            input: "media/clip.mp4", asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil)
        #expect(try eventually { try fixture.gateway.jobs.job(job.id)?.state == .failed })
        #expect(try fixture.gateway.jobs.job(job.id)?.error == "the input has no video")
    }

    @Test func requeuesAJobLeftRunningByADeadProcessAndFinishesIt() throws {
        let engine = FakeEngine()
        let fixture = try fixture(engine: engine)
        // A previous process claimed the job, started writing, and died.
        let (job, _) = try fixture.gateway.jobs.submit(
            input: "media/clip.mp4", asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil)
        _ = try fixture.store.claimNextJob(at: Date())
        try fixture.scratch.write("data/assets/.\(job.id)-1.guard-play-99-x.partial/seg0.ts", "half")
        try fixture.gateway.start()
        defer { fixture.gateway.stop() }
        #expect(try eventually { try fixture.gateway.jobs.job(job.id)?.state == .succeeded })
        #expect(try fixture.gateway.jobs.job(job.id)?.attempts == 2)
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.scratch.path + "/data/assets")
        #expect(names == ["\(job.id)-2"])
    }

    @Test func putsAnInterruptedJobBackInTheQueueOnShutdown() throws {
        let engine = FakeEngine()
        engine.hold(true)
        let fixture = try fixture(engine: engine)
        try fixture.gateway.start()
        let (job, _) = try fixture.gateway.jobs.submit(
            input: "media/clip.mp4", asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil)
        #expect(try eventually { try fixture.gateway.jobs.job(job.id)?.state == .running })
        fixture.gateway.stop()
        let stopped = try #require(try fixture.store.job(job.id))
        #expect(stopped.state == .queued && stopped.attempts == 0)
    }

    @Test(arguments: [
        "../outside.mp4", "/etc/passwd", "media/../media/clip.mp4", "media/./clip.mp4", "", "media/missing.mp4",
        "media", "media/clip.mp4\u{0}x",
    ])
    func refusesInputsOutsideTheInputRoot(_ input: String) throws {
        let fixture = try fixture(engine: FakeEngine())
        try fixture.scratch.write("outside.mp4", "x")
        #expect(throws: GatewayError.self) {
            _ = try fixture.gateway.jobs.submit(
                input: input, asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil)
        }
    }

    @Test func refusesASymbolicLinkOutOfTheInputRoot() throws {
        let fixture = try fixture(engine: FakeEngine())
        let outside = try fixture.scratch.write("outside.mp4", "x")
        try FileManager.default.createSymbolicLink(
            atPath: fixture.scratch.path + "/inputs/link.mp4", withDestinationPath: outside)
        #expect(throws: GatewayError.self) {
            _ = try fixture.gateway.jobs.submit(
                input: "link.mp4", asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil)
        }
    }

    @Test func pagesJobsWithACursor() throws {
        let fixture = try fixture(engine: FakeEngine())
        let ids = try (0..<5).map { _ in
            try fixture.gateway.jobs.submit(
                input: "media/clip.mp4", asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil
            ).job.id
        }
        let first = try fixture.gateway.jobs.list(after: nil, limit: 3)
        #expect(first.jobs.map(\.id) == ids.reversed().prefix(3).map { $0 })
        let second = try fixture.gateway.jobs.list(after: first.next, limit: 3)
        #expect(second.jobs.map(\.id) == [ids[1], ids[0]] && second.next == nil)
    }

    @Test func saysSoWhenThereIsNoPackager() throws {
        let fixture = try GatewayFixture(engine: nil)
        #expect(!fixture.gateway.jobs.isAvailable)
        #expect {
            _ = try fixture.gateway.jobs.submit(
                input: "x", asset: "y", denyKeysWhileCapturing: false, idempotencyKey: nil)
        } throws: { ($0 as? GatewayError)?.code == "packaging-unavailable" }
    }
}
