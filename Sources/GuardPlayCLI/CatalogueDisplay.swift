import Foundation
import Synchronization

/// What `catalogue` shows while it runs: on a terminal (standard error a TTY) a bar redrawn in place,
/// with only failures printed above it; otherwise one line per file on standard output as each ends.
final class CatalogueDisplay: Sendable {
    private let total: Int
    /// The file column's width: the longest name, up to 40.
    private let width: Int
    private let bar: Bool
    private let quiet: Bool
    private let done = Mutex(0)

    init(files: [String], quiet: Bool) {
        total = files.count
        width = min(40, files.map(\.count).max() ?? 0)
        self.quiet = quiet
        bar = !quiet && isatty(STDERR_FILENO) == 1
        if bar { draw(0, current: "") }
    }

    /// Shows one finished file.
    func finished(_ result: CatalogueResult) {
        let count = done.withLock { value in
            value += 1
            return value
        }
        let status = result.status == .passed ? "ok" : result.status == .failed ? "FAILED" : "skipped"
        let file = result.file.padding(toLength: max(width, result.file.count), withPad: " ", startingAt: 0)
        let line = "\(status.padding(toLength: 8, withPad: " ", startingAt: 0))\(file)  \(result.message)"
        if bar {
            FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
            if result.status != .passed { FileHandle.standardError.write(Data((line + "\n").utf8)) }
            draw(count, current: result.file)
        } else if !quiet || result.status == .failed {
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }

    /// Clears the bar before the closing line.
    func end() {
        if bar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    private func draw(_ count: Int, current: String) {
        let width = 30
        let filled = total == 0 ? width : count * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(count)/\(total) \(current.suffix(40))".utf8))
    }
}
