import Foundation
import Gateway
import Testing

/// A failed job's error names the input as the client gave it, never the server's paths.
@Suite struct JobErrorPathTests {
    @Test func aFailedJobNamesItsInputRelativeToTheInputRoot() throws {
        let fixture = try GatewayFixture(engine: PackagerEngine())
        try fixture.scratch.write("inputs/media/notes.mp4", "#!/bin/sh\necho this is a script, not media\n")
        try fixture.gateway.start()
        defer { fixture.gateway.stop() }
        let (job, _) = try fixture.gateway.jobs.submit(
            input: "media/notes.mp4", asset: "notes", denyKeysWhileCapturing: false, idempotencyKey: nil)
        #expect(try eventually { try fixture.gateway.jobs.job(job.id)?.state == .failed })
        let error = try #require(try fixture.gateway.jobs.job(job.id)?.error)
        #expect(error.contains("media/notes.mp4"), "\(error)")
        #expect(!error.contains(fixture.scratch.path) && !error.contains("/inputs/"), "\(error)")
        // The operator's log still names the file on the server. The worker logs after it records the
        // failure, so the line may come a moment after the state.
        #expect(
            eventually {
                fixture.logSink.lines.withLock { $0.contains { $0.contains(job.id) && $0.contains("failed") } }
            })
    }
}
