import Foundation
import Glibc
import Synchronization
import Testing

@testable import Packager

/// What `force` may replace is checked again just before publishing: a directory of someone else's or
/// a symbolic link that appears at the output or key file while the job runs is left alone, and the
/// job fails without publishing.
@Suite struct OutputOwnershipTests {
    /// Options to package song.m4a into `scratch/out` with `force`, the key beside it.
    private func forcedOptions(_ scratch: Scratch) -> PackagingOptions {
        var options = PackagingOptions(
            input: media.appendingPathComponent("song.m4a").path, output: scratch.path + "/out")
        options.keyFile = PackagingOptions.defaultKeyFile(for: options.output)
        options.force = true
        return options
    }

    /// Runs the job, calling `plant` once from the first progress report while it runs (and expecting
    /// that it was called).
    private func run(_ options: PackagingOptions, planting plant: @escaping @Sendable () -> Void) throws {
        let planted = Mutex(false)
        defer { #expect(planted.withLock { $0 }, "the job reported no progress to plant during") }
        _ = try PackagingJob(options: options).run(progress: { progress in
            guard progress.fraction > 0, progress.fraction < 1 else { return }
            planted.withLock { done in
                guard !done else { return }
                done = true
                plant()
            }
        })
    }

    @Test func aForeignDirectoryThatAppearsWhileTheJobRunsIsNotReplaced() throws {
        let scratch = try Scratch()
        let options = forcedOptions(scratch)
        #expect {
            try run(options) {
                try? FileManager.default.createDirectory(atPath: options.output, withIntermediateDirectories: false)
                try? Data("mine\n".utf8).write(to: URL(fileURLWithPath: options.output + "/notes.txt"))
            }
        } throws: { error in
            (error as? PackagingError)?.kind == .outputExists && "\(error)".contains("not an output of guard-play")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: options.output) == ["notes.txt"])
        #expect(!FileManager.default.fileExists(atPath: options.keyFile!))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["out"])
    }

    @Test func aKeyFileLinkThatAppearsWhileTheJobRunsIsNotWrittenThrough() throws {
        let scratch = try Scratch()
        let options = forcedOptions(scratch)
        let victim = scratch.path + "/victim"
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        #expect {
            try run(options) {
                try? FileManager.default.createSymbolicLink(atPath: options.keyFile!, withDestinationPath: victim)
            }
        } throws: { error in
            (error as? PackagingError)?.kind == .outputExists && "\(error)".contains("symbolic link")
        }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: options.keyFile!) == victim)
        #expect(!FileManager.default.fileExists(atPath: options.output))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted() == ["out.key", "victim"])
    }
}
