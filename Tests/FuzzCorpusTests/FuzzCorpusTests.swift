import Foundation
import FuzzTargets
import ProcessTestSupport
import Testing

/// The repository root, found from this file's path so tests run from any working directory.
private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

/// `fuzz-replay`, built beside the tests.
private let replayBinary: String = {
    let candidates = ["debug", "release"].map { repositoryRoot.appendingPathComponent(".build/\($0)/fuzz-replay").path }
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
}()

/// What one replay left behind.
private struct Replay {
    let status: Int32?
    let stdout: String
    let stderr: String
}

/// Runs `fuzz-replay TARGET PATH…` in a child process, so an input that traps fails the test that
/// ran it instead of ending the test runner, and gives it `timeout` seconds.
private func replay(_ target: String, _ paths: [String], timeout: Double = 120) throws -> Replay {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-replay-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let out = directory.appendingPathComponent("stdout").path
    let err = directory.appendingPathComponent("stderr").path
    // A trap would otherwise start swift-backtrace, which is slow and (under ASan) hangs.
    let child = try SpawnedProcess(
        [replayBinary, target] + paths, environment: ["SWIFT_BACKTRACE": "enable=no"], output: out, errors: err)
    let status = child.wait(timeout: timeout)
    child.end()
    return Replay(
        status: status, stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
}

/// The committed inputs of `target`: its minimised corpus and its regression files.
private func inputs(_ target: FuzzTarget) -> (directories: [String], count: Int) {
    let fuzz = repositoryRoot.appendingPathComponent("fuzz")
    let directories = ["corpus", "regressions"].map {
        fuzz.appendingPathComponent($0).appendingPathComponent(target.rawValue).path
    }
    .filter { FileManager.default.fileExists(atPath: $0) }
    let count = directories.reduce(0) { total, directory in
        total
            + ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { !$0.hasPrefix(".") }
            .count
    }
    return (directories, count)
}

@Suite struct FuzzCorpusTests {
    /// Every committed corpus and regression input runs through its target without a trap: the
    /// crashes fuzzing found stay fixed.
    @Test(arguments: FuzzTarget.parsers)
    func corpusReplays(_ target: FuzzTarget) throws {
        let (directories, count) = inputs(target)
        #expect(count > 0, "fuzz/corpus/\(target.rawValue) holds no inputs: run scripts/fuzz-corpus.sh")
        guard count > 0 else { return }
        let result = try replay(target.rawValue, directories)
        let last = result.stderr.split(separator: "\n").last { $0.hasPrefix("replaying ") } ?? "none"
        #expect(
            result.status == 0, "\(target.rawValue) failed (status \(String(describing: result.status))) on \(last)")
        #expect(result.stdout.contains("\(target.rawValue): \(count) inputs ran"))
    }

    /// The replay can fail: a directory holding one input that traps (the canary target's) ends the
    /// replay by its signal and names that input, while the same directory without it passes.
    @Test func trappingInputFailsTheReplay() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("canary-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("harmless".utf8).write(to: directory.appendingPathComponent("a-harmless"))
        let clean = try replay("canary", [directory.path])
        #expect(clean.status == 0)
        #expect(clean.stdout.contains("canary: 1 inputs ran"))

        try Data("CANARY: corrupted".utf8).write(to: directory.appendingPathComponent("b-corrupted"))
        let failed = try replay("canary", [directory.path])
        #expect(failed.status != nil && failed.status != 0, "a trapping input must fail the replay")
        #expect(failed.stderr.contains("replaying \(directory.path)/b-corrupted"))
        #expect(!failed.stdout.contains("inputs ran"))
    }

    /// A target name the replay does not know is a usage error, not a silent pass.
    @Test func unknownTargetIsAUsageError() throws {
        let result = try replay("no-such-target", ["/dev/null"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("targets: json"))
    }
}
