import Foundation
import Glibc

/// The output directory, built as a hidden sibling and published in one rename, so that `--out` holds
/// either the previous output or the complete new one, never a half-written one.
///
/// The sibling is named `.NAME.guard-play-PID-RANDOM.partial`. A run killed with SIGKILL leaves it
/// behind; the next run for the same output removes every such sibling whose process is gone.
/// Replacing an existing output swaps the two directories atomically (`renameat2` with
/// `RENAME_EXCHANGE`) and then deletes the old one.
struct OutputDirectory {
    /// The published path.
    let path: String
    /// The temporary sibling being built.
    let temporary: String

    static let suffix = ".partial"
    static let marker = ".guard-play-"

    /// Checks the output (and key file) can be written, removes stale siblings of dead runs, and
    /// creates the temporary sibling.
    static func prepare(_ output: String, force: Bool) throws(PackagingError) -> OutputDirectory {
        let absolute = absolutePath(output)
        let name = (absolute as NSString).lastPathComponent
        let parent = (absolute as NSString).deletingLastPathComponent
        guard !name.isEmpty, name != ".", name != "..", absolute != "/" else {
            throw PackagingError(.invalidOptions, "output '\(output)' must name a directory to create")
        }
        var status = stat()
        if lstat(absolute, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw PackagingError(
                    .outputExists, "output \(output) exists and is not a directory: choose another --out")
            }
            guard force else {
                throw PackagingError(
                    .outputExists,
                    "output directory \(output) already exists: pass --force to replace it, or choose another --out")
            }
        }
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw PackagingError(
                .outputFailed, "cannot create the parent directory \(parent): \(error.localizedDescription)")
        }
        removeStaleSiblings(of: name, in: parent)
        let random = (0..<4).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        let temporary = "\(parent)/.\(name)\(marker)\(getpid())-\(random)\(suffix)"
        guard mkdir(temporary, 0o755) == 0 else { throw SegmentFile.failure("create the directory", temporary) }
        return OutputDirectory(path: absolute, temporary: temporary)
    }

    /// `path` made absolute against the working directory, with trailing slashes dropped.
    static func absolutePath(_ path: String) -> String {
        var result = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        while result.count > 1 && result.hasSuffix("/") { result.removeLast() }
        return (result as NSString).standardizingPath
    }

    /// Removes `.NAME.guard-play-PID-*.partial` siblings (directories or files) whose process is gone.
    static func removeStaleSiblings(of name: String, in parent: String) {
        let prefix = ".\(name)\(marker)"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for entry in entries where entry.hasPrefix(prefix) && entry.hasSuffix(suffix) {
            let rest = entry.dropFirst(prefix.count)
            guard let pid = Int32(rest.prefix { $0 != "-" }), pid > 0, pid != getpid() else { continue }
            if kill(pid, 0) == 0 || errno == EPERM { continue }  // still running
            try? FileManager.default.removeItem(atPath: parent + "/" + entry)
        }
    }

    /// Publishes the temporary directory at `path`, replacing (and then deleting) an existing one.
    func commit() throws(PackagingError) {
        var status = stat()
        if lstat(path, &status) == 0 {
            guard exchange(temporary, path) else {
                throw PackagingError(
                    .outputFailed, "cannot swap \(temporary) into \(path): \(String(cString: strerror(errno)))")
            }
            try? FileManager.default.removeItem(atPath: temporary)  // now the previous output
        } else {
            guard rename(temporary, path) == 0 else {
                throw PackagingError(
                    .outputFailed, "cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Removes the temporary directory and everything in it.
    func discard() { try? FileManager.default.removeItem(atPath: temporary) }

    /// Swaps two paths atomically with `renameat2(RENAME_EXCHANGE)`, looked up at run time because
    /// Glibc's module does not declare it; without it, two renames with a brief gap.
    private func exchange(_ first: String, _ second: String) -> Bool {
        typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
        let renameExchange: UInt32 = 1 << 1
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") {
            let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
            if renameat2(AT_FDCWD, first, AT_FDCWD, second, renameExchange) == 0 { return true }
            if errno != ENOSYS && errno != EINVAL { return false }
        }
        let aside = String(first.dropLast(OutputDirectory.suffix.count)) + "-previous" + OutputDirectory.suffix
        guard rename(second, aside) == 0 else { return false }
        guard rename(first, second) == 0 else {
            _ = rename(aside, second)
            return false
        }
        return rename(aside, first) == 0
    }
}
