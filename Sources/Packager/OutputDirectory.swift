import FoundationEssentials
import Glibc
import MediaCore
import SystemSupport

/// The output directory, built as a hidden sibling and published in one rename, so that `--out` holds
/// either the previous output or the complete new one, never a half-written one.
///
/// The sibling is named `.NAME.guard-play-PID-RANDOM.partial`. A run killed with SIGKILL leaves it
/// behind; the next run for the same output removes every such sibling whose process is gone.
/// Replacing an existing output swaps the two directories atomically (`renameat2` with
/// `RENAME_EXCHANGE`) and then deletes the old one.
///
/// Every output holds a marker file, `.guard-play-output`, written first into the sibling. `--force`
/// replaces only a directory that holds one (or an empty one), checked when the job starts and again
/// just before the swap: the packager never deletes a directory of files it did not write.
struct OutputDirectory {
    /// The published path.
    let path: String
    /// The temporary sibling being built.
    let temporary: String

    static let suffix = ".partial"
    static let marker = ".guard-play-"
    /// The file in every published output that says the packager wrote it.
    static let ownershipMarker = ".guard-play-output"

    /// Checks the output (and key file) can be written, removes stale siblings of dead runs, and
    /// creates the temporary sibling.
    static func prepare(_ output: String, force: Bool) throws(PackagingError) -> OutputDirectory {
        let absolute = absolutePath(output)
        let name = absolute.lastPathComponent
        let parent = absolute.deletingLastPathComponent
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
            try checkReplaceable(absolute, as: output)
        }
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw PackagingError(
                .outputFailed, "cannot create the parent directory \(parent): \(failureText(error))")
        }
        removeStaleSiblings(of: name, in: parent)
        let random = (0..<4).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        let temporary = "\(parent)/.\(name)\(marker)\(getpid())-\(random)\(suffix)"
        guard mkdir(temporary, 0o755) == 0 else { throw SegmentFile.failure("create the directory", temporary) }
        let directory = OutputDirectory(path: absolute, temporary: temporary)
        do throws(PackagingError) {
            try directory.writeOwnershipMarker()
        } catch {
            directory.discard()
            throw error
        }
        return directory
    }

    /// `path` made absolute against the working directory: its parent resolved (links, `.`, `..`),
    /// its last name kept as given, so a symbolic link there is the entry itself and never followed.
    static func absolutePath(_ path: String) -> String { PathIdentity.entryPath(path) }

    /// Refuses to replace the existing directory at `path` unless it is empty or holds the marker of a
    /// previous output; `given` is the path as the user wrote it.
    static func checkReplaceable(_ path: String, as given: String) throws(PackagingError) {
        var status = stat()
        if lstat(path + "/" + ownershipMarker, &status) == 0 && status.st_mode & S_IFMT == S_IFREG { return }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [""]
        if entries.isEmpty { return }
        throw PackagingError(
            .outputExists,
            "\(given) is not an output of guard-play package (it holds no \(ownershipMarker)): --force replaces "
                + "only a previous output; remove it yourself or choose another --out")
    }

    /// Writes the ownership marker into the temporary directory (`O_EXCL`, never through a link).
    private func writeOwnershipMarker() throws(PackagingError) {
        let file = temporary + "/" + OutputDirectory.ownershipMarker
        let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SegmentFile.failure("create the output marker", file) }
        defer { close(descriptor) }
        let text = Array("written by guard-play package; --force may replace this directory\n".utf8)
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == text.count else { throw SegmentFile.failure("write the output marker", file) }
    }

    /// Removes `.NAME.guard-play-PID-*.partial` siblings (directories or files) whose process is gone,
    /// or, with `anyProcess`, every one but this process's own; returns the names removed.
    @discardableResult
    static func removeStaleSiblings(of name: String, in parent: String, anyProcess: Bool = false) -> [String] {
        let prefix = ".\(name)\(marker)"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return [] }
        var removed: [String] = []
        for entry in entries where entry.hasPrefix(prefix) && entry.hasSuffix(suffix) {
            let rest = entry.dropFirst(prefix.count)
            guard let pid = Int32(rest.prefix { $0 != "-" }), pid > 0, pid != getpid() else { continue }
            if !anyProcess && (kill(pid, 0) == 0 || errno == EPERM) { continue }  // still running
            if (try? FileManager.default.removeItem(atPath: parent + "/" + entry)) != nil { removed.append(entry) }
        }
        return removed
    }

    /// Publishes the temporary directory at `path`, replacing (and then deleting) an existing one.
    func commit() throws(PackagingError) {
        try checkStillReplaceable()
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

    /// Checks again, just before publishing, that what is now at `path` may be replaced: nothing, or a
    /// directory holding the marker (something else may have appeared there while the job ran).
    func checkStillReplaceable() throws(PackagingError) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw PackagingError(.outputExists, "output \(path) appeared while packaging and is not a directory")
        }
        try OutputDirectory.checkReplaceable(path, as: path)
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

extension PackagingJob {
    /// Removes the partial output a run for `output` left beside it (`.NAME.guard-play-PID-RANDOM.partial`),
    /// whatever process wrote it, for a caller that knows that run is gone: a gateway job whose lease
    /// lapsed, run perhaps on another machine, where its PID means nothing. Only entries of exactly
    /// that pattern for this output go; the output itself, finished or not, and everything else beside
    /// it stay. Returns the names removed.
    @discardableResult
    public static func removePartialOutput(of output: String) -> [String] {
        let absolute = OutputDirectory.absolutePath(output)
        let name = absolute.lastPathComponent
        guard !name.isEmpty, name != ".", name != "..", absolute != "/" else { return [] }
        return OutputDirectory.removeStaleSiblings(
            of: name, in: absolute.deletingLastPathComponent, anyProcess: true)
    }
}
