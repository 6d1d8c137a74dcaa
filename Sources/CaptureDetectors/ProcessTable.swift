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
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: root) else { return [] }
        var result: [ProcessSnapshot] = []
        result.reserveCapacity(entries.count)
        for entry in entries {
            guard let pid = Int32(entry), pid > 0 else { continue }
            let directory = root + "/" + entry
            guard let comm = Self.read(directory + "/comm") else { continue }
            let name = String(decoding: comm, as: UTF8.self).trimmingCharacters(in: .newlines)
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

    /// Reads a small procfs file whole; nil when it is gone or unreadable.
    static func read(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65_536 {
            let count = buffer.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return bytes
    }
}
