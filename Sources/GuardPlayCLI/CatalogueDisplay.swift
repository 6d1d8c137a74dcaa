import FoundationEssentials
import Glibc
import Synchronization
import SystemSupport

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
        let file = result.file.padded(toLength: max(width, result.file.count))
        let line = "\(status.padded(toLength: 8))\(file)  \(result.message)"
        if bar {
            StandardStream.error.write("\r\u{1B}[K")
            if result.status != .passed { StandardStream.error.write((line + "\n")) }
            draw(count, current: result.file)
        } else if !quiet || result.status == .failed {
            StandardStream.output.write((line + "\n"))
        }
    }

    /// Clears the bar before the closing line.
    func end() {
        if bar { StandardStream.error.write("\r\u{1B}[K") }
    }

    private func draw(_ count: Int, current: String) {
        let width = 30
        let filled = total == 0 ? width : count * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        StandardStream.error.write("\r[\(bar)] \(count)/\(total) \(current.suffix(40))")
    }
}
