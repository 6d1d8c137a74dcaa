import FoundationEssentials
import Glibc
import SystemSupport

/// Where a path really leads, so two spellings of one file (`in.wav`, `./in.wav`, a symbolic link, a
/// hard link, a bind mount) are recognised as one before anything is written over it.
///
/// Strings are never compared as given: the existing part of the path is resolved with `realpath(3)`
/// (symbolic links, `.` and `..`), the part that does not exist yet is normalised lexically, and where
/// the file exists its device and inode (`stat(2)`, following links) decide. Every command that writes
/// (the player's `--output`, the packager's `--out` and `--key-file`, the gateway's data directory)
/// checks its outputs against its inputs with this one type.
public struct PathIdentity: Sendable, Equatable, CustomStringConvertible {
    /// A file's device and inode.
    public struct FileID: Sendable, Hashable {
        /// `st_dev`.
        public var device: UInt64
        /// `st_ino`.
        public var inode: UInt64
    }

    /// The path as the caller gave it, for messages.
    public let given: String
    /// The absolute path with the links, `.` and `..` of its existing part resolved.
    public let resolved: String
    /// The device and inode of what the path names, following links; nil when nothing is there.
    public let file: FileID?

    /// The identity of `path`, relative paths taken against the working directory. URLs
    /// (`scheme://…`) name no local file: they resolve to themselves and match nothing else.
    public init(_ path: String) {
        given = path
        if PathIdentity.isURL(path) {
            resolved = path
            file = nil
            return
        }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        resolved = PathIdentity.resolve(absolute)
        file = PathIdentity.fileID(resolved)
    }

    public var description: String { given }

    /// True when both name the same file: the same device and inode, or the same resolved path.
    public func isSame(as other: PathIdentity) -> Bool {
        if PathIdentity.isURL(resolved) || PathIdentity.isURL(other.resolved) { return false }
        if let file, let otherFile = other.file { return file == otherFile }
        return resolved == other.resolved
    }

    /// True when this names a directory that is `other` or holds it at any depth: by resolved path,
    /// and by device and inode of each directory above `other` (which also sees through bind mounts).
    public func contains(_ other: PathIdentity) -> Bool {
        if isSame(as: other) { return true }
        if PathIdentity.isURL(resolved) || PathIdentity.isURL(other.resolved) { return false }
        if resolved == "/" || other.resolved.hasPrefix(resolved + "/") { return true }
        guard let file else { return false }
        var ancestor = other.resolved
        while ancestor != "/" && !ancestor.isEmpty {
            ancestor = ancestor.deletingLastPathComponent
            if PathIdentity.fileID(ancestor) == file { return true }
        }
        return false
    }

    /// True when either contains the other (or both are one).
    public func overlaps(_ other: PathIdentity) -> Bool { contains(other) || other.contains(self) }

    /// The absolute path of the name `path` gives, for writing there: its parent resolved (links, `.`,
    /// `..`), its last name kept, so a symbolic link in that place is the entry itself and is never
    /// followed. Trailing slashes are dropped; a last name of `.` or `..` is resolved.
    public static func entryPath(_ path: String) -> String {
        var absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        while absolute.count > 1 && absolute.hasSuffix("/") { absolute.removeLast() }
        let name = absolute.lastPathComponent
        if absolute == "/" || name == "." || name == ".." { return resolve(absolute) }
        let parent = resolve(String(absolute.dropLast(name.utf8.count)))
        return parent == "/" ? "/" + name : parent + "/" + name
    }

    /// `scheme://…`: a URL for FFmpeg, not a file path.
    static func isURL(_ path: String) -> Bool {
        guard let scheme = path.firstRange(of: "://") else { return false }
        let name = path[..<scheme.lowerBound]
        return !name.isEmpty && name.allSatisfy { $0.isLetter }
    }

    /// `absolute` with its longest existing prefix resolved by `realpath` and the rest normalised
    /// lexically (a `..` there steps back over a name that does not exist, as the kernel would refuse
    /// to, so nothing is lost by doing it on the string).
    static func resolve(_ absolute: String) -> String {
        var components = absolute.split(separator: "/").map(String.init)
        var rest: [String] = []
        while true {
            let prefix = "/" + components.joined(separator: "/")
            if let real = realpath(prefix, nil) {
                defer { free(real) }
                return normalise(String(cString: real), appending: rest)
            }
            guard let last = components.popLast() else { return normalise("/", appending: rest) }
            rest.insert(last, at: 0)
        }
    }

    private static func normalise(_ base: String, appending rest: [String]) -> String {
        var parts = base.split(separator: "/").map(String.init)
        for part in rest {
            switch part {
            case "", ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The device and inode at `path` (`stat`, following links), or nil.
    static func fileID(_ path: String) -> FileID? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return FileID(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}
