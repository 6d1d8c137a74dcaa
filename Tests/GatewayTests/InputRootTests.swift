import Foundation
import Gateway
import Testing

/// A packaging job's input never lies among the gateway's own files, so no job output (under
/// `DATA/assets`) and no clean-up of old outputs can land on an input, however the input is spelled.
@Suite struct InputRootTests {
    /// A gateway whose input root is the scratch directory, which holds the data directory (as the
    /// defaults, `--input-root .` and `--data ./guard-data`, do).
    private func gatewayOverItsData() throws -> GatewayFixture {
        let fixture = try GatewayFixture(engine: FakeEngine()) { configuration in
            configuration.inputRoot = (configuration.dataDirectory as NSString).deletingLastPathComponent
        }
        try fixture.scratch.write("data/assets/job_old-1/video_00000.ts", "segment")
        try fixture.scratch.write("inputs/clip.mp4", "not really media")
        try FileManager.default.createSymbolicLink(
            atPath: fixture.scratch.path + "/inputs/link.ts",
            withDestinationPath: "../data/assets/job_old-1/video_00000.ts")
        return fixture
    }

    @Test func refusesAnInputInsideTheDataDirectory() throws {
        let fixture = try gatewayOverItsData()
        for input in ["data/assets/job_old-1/video_00000.ts", "inputs/link.ts", "data/guardplay.db"] {
            do {
                _ = try fixture.gateway.jobs.submit(
                    input: input, asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil)
                Issue.record("\(input) was accepted")
            } catch {
                #expect(error.code == "input-in-data-directory", "\(input): \(error)")
                #expect(error.status == 422)
                #expect(!error.detail.contains(fixture.scratch.path), "\(error.detail)")
            }
        }
        let (job, created) = try fixture.gateway.jobs.submit(
            input: "inputs/clip.mp4", asset: "movie", denyKeysWhileCapturing: false, idempotencyKey: nil)
        #expect(created && job.state == .queued)
    }
}
