import Foundation

/// Reads the running processes from a procfs mount (`/proc` normally; tests may point it elsewhere).
public struct ProcessTable: Sendable {
    /// The procfs root.
    public let root: String

    /// Creates a reader for `root`.
    public init(root: String = "/proc") {
        self.root = root
    }

    /// Every process whose `comm` and command line could be read. Processes that exit mid-scan are
    /// skipped, and so are kernel threads and zombies, whose command line is empty.
    public func snapshot() -> [ProcessSnapshot] {
        snapshot { _ in true }
    }

    /// Like `snapshot()`, but reads the command line only of processes whose `comm` passes `accept`
    /// (a scan for a few known names then costs one small read per process).
    public func snapshot(acceptingComm accept: (String) -> Bool) -> [ProcessSnapshot] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: root) else { return [] }
        var result: [ProcessSnapshot] = []
        result.reserveCapacity(entries.count)
        for entry in entries {
            guard let pid = Int32(entry), pid > 0 else { continue }
            let directory = root + "/" + entry
            guard let comm = Self.read(directory + "/comm") else { continue }
            let name = String(decoding: comm, as: UTF8.self).trimmingCharacters(in: .newlines)
            guard accept(name) else { continue }
            guard let cmdline = Self.read(directory + "/cmdline"), !cmdline.isEmpty else { continue }
            let arguments = cmdline.split(separator: 0, omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
            result.append(
                ProcessSnapshot(
                    pid: pid, comm: name, arguments: arguments.last == "" ? Array(arguments.dropLast()) : arguments))
        }
        return result
    }

    /// The inodes of the sockets `pid` holds open (its `/proc/PID/fd` links that read `socket:[INODE]`), or
    /// nil when that folder cannot be read (another user's process, or one that has exited).
    public func socketInodes(pid: Int32) -> Set<UInt64>? {
        let directory = "\(root)/\(pid)/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
        var inodes = Set<UInt64>()
        var target = [CChar](repeating: 0, count: 64)
        for entry in entries {
            let count = readlink(directory + "/" + entry, &target, target.count - 1)
            guard count > 9 else { continue }
            let link = String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard link.hasPrefix("socket:["), link.hasSuffix("]"),
                let inode = UInt64(link.dropFirst(8).dropLast())
            else { continue }
            inodes.insert(inode)
        }
        return inodes
    }

    /// Reads a procfs file whole; nil when it is gone or unreadable. At most `limit` bytes are read (a
    /// command line longer than 64 KiB is cut there); `complete` says a longer file is nil instead.
    static func read(_ path: String, limit: Int = 65_536, complete: Bool = false) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = buffer.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        if complete, bytes.count >= limit { return nil }
        return bytes
    }
}
