import Foundation
import Testing

/// The repository root, found from this file's path so tests run from any working directory.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

/// A committed fixture in `media/`.
func fixture(_ name: String) -> String {
    repositoryRoot.appendingPathComponent("media").appendingPathComponent(name).path
}

/// The `guard-play` binary built beside the tests.
let guardPlayBinary: String = {
    let candidates = ["debug", "release"].map {
        repositoryRoot.appendingPathComponent(".build/\($0)/guard-play").path
    }
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
}()

/// What a finished process left behind.
struct ProcessResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs `executable` with `arguments` to completion, killing it after `timeout` seconds so a hang
/// fails the test instead of stalling the run.
@discardableResult
func run(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: TimeInterval = 120
) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    process.environment = merged
    let directory = try TemporaryDirectory()
    let outURL = directory.url.appendingPathComponent("stdout")
    let errURL = directory.url.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(20_000) }
    if process.isRunning {
        process.terminate()
        process.waitUntilExit()
        Issue.record("\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
    }
    process.waitUntilExit()
    // Foundation may already have closed these after handing them to the child (EBADF here once).
    try? out.close()
    try? err.close()
    return ProcessResult(
        status: process.terminationStatus,
        stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
        stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
}

/// Runs `guard-play` with `arguments`.
@discardableResult
func guardPlay(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 120) throws
    -> ProcessResult
{
    try run(guardPlayBinary, arguments, environment: environment, timeout: timeout)
}

/// A fresh directory under the system's temporary directory, removed when the value is released (or,
/// for a fixture held in a `static let`, which Swift never releases, at exit: `removedAtExit()`).
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("guardplay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// A path inside the directory.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Has the directory removed when the test process exits too: a suite's fixture made once and held
    /// in a `static let` lives until then, and its deinit never runs. Returns the directory.
    @discardableResult
    func removedAtExit() -> Self {
        RemovedAtExit.add(url.path)
        return self
    }
}

/// Paths the test process removes as it exits (`atexit`).
enum RemovedAtExit {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var paths: [String] = []

    /// Removes `path` (a file or a whole directory) at exit.
    static func add(_ path: String) {
        lock.lock()
        paths.append(path)
        let first = paths.count == 1
        lock.unlock()
        if first { atexit { RemovedAtExit.removeAll() } }
    }

    private static func removeAll() {
        lock.lock()
        let all = paths
        lock.unlock()
        for path in all { try? FileManager.default.removeItem(atPath: path) }
    }
}
