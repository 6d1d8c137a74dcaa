import Foundation
import Synchronization
import Testing

@testable import Packager

let media = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("media")

/// A scratch directory removed when released.
final class Scratch {
    let path: String
    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("packager-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The library API the gateway calls: a job with progress, notices, cancellation and a result, and
/// the verifier's structured report.
@Suite struct PackagingJobTests {
    @Test func reportsProgressUpToOneAndReturnsWhatItWrote() throws {
        let scratch = try Scratch()
        var options = PackagingOptions(
            input: media.appendingPathComponent("clip.mp4").path, output: scratch.path + "/clip")
        options.keyFile = PackagingOptions.defaultKeyFile(for: options.output)
        options.keyURITemplate = "https://gw.example.com/v1/keys/{kid}"
        let fractions = Mutex<[Double]>([])
        let result = try PackagingJob(options: options).run(progress: { progress in
            fractions.withLock { $0.append(progress.fraction) }
        })
        let seen = fractions.withLock { $0 }
        #expect(seen.count > 10)
        #expect(seen == seen.sorted())
        #expect(seen.last == 1 && seen.dropLast().allSatisfy { $0 < 1 })
        #expect(result.keyURI == "https://gw.example.com/v1/keys/\(result.keyID.hexString)")
        #expect(result.key?.count == 16 && result.iv?.count == 16)
        #expect(result.mediaPlaylists == ["video.m3u8", "iframes.m3u8"])
        #expect(result.streams.map(\.codec) == ["avc1.64001e", "mp4a.40.2"])
        #expect(result.streams.map(\.accessUnits) == [300, 470])
        #expect(result.segmentCount == 2)
        #expect(abs(result.duration - 10.021) < 0.01)
        #expect(result.keyFile == scratch.path + "/clip.key")

        let report = try Verifier(directory: result.outputDirectory, key: result.key, source: options.input).run()
        #expect(report.passed && report.method == "SAMPLE-AES")
        #expect(report.streams.map(\.framesEqual) == [300, 470])
        #expect(report.iFramesChecked == 5 && report.iFramesEqual == 5)
    }

    @Test func stopsWhenCancelledAndLeavesNothing() throws {
        let scratch = try Scratch()
        let output = scratch.path + "/clip"
        var options = PackagingOptions(input: media.appendingPathComponent("clip.mp4").path, output: output)
        options.keyFile = output + ".key"
        let cancellation = PackagingCancellation()
        let lastFraction = Mutex(0.0)
        #expect {
            try PackagingJob(options: options).run(
                progress: { progress in
                    lastFraction.withLock { $0 = progress.fraction }
                    if progress.fraction > 0.3 { cancellation.cancel() }
                }, cancellation: cancellation)
        } throws: { error in
            (error as? PackagingError)?.kind == .cancelled
        }
        #expect(lastFraction.withLock { $0 } < 0.5)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
    }

    @Test func givesNoticesAndNeedsNoKeyFile() throws {
        let scratch = try Scratch()
        var options = PackagingOptions(
            input: media.appendingPathComponent("voice-22k-mono.mp3").path, output: scratch.path + "/voice")
        options.keyURITemplate = "skd://{kid}"
        options.keyFormat = .fairplay
        let notices = Mutex<[String]>([])
        let result = try PackagingJob(options: options).run(notice: { text in notices.withLock { $0.append(text) } })
        #expect(notices.withLock { $0 } == result.notices)
        #expect(result.notices.count == 1 && result.notices[0].contains("transcoding mp3"))
        #expect(result.keyFile == nil && result.streams.first?.transcodedFrom == "mp3")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["voice"])
        let report = try Verifier(directory: result.outputDirectory, key: result.key, source: options.input).run()
        #expect(report.passed, "\(report.problems) \(report.mismatches)")
        #expect(report.streams.first?.comparison?.contains("deterministic AAC-LC re-encode") == true)
    }

    @Test func verifierRefusesToRunWithoutAKey() throws {
        let scratch = try Scratch()
        var options = PackagingOptions(
            input: media.appendingPathComponent("song.m4a").path, output: scratch.path + "/s")
        options.keyURITemplate = "https://k/{kid}"
        let result = try PackagingJob(options: options).run()
        #expect {
            try Verifier(directory: result.outputDirectory).run()
        } throws: { error in
            (error as? VerificationError)?.kind == .keyMissing
        }
    }
}
