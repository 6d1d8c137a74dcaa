import FoundationEssentials
import Glibc
import SystemSupport

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
        var result: [ProcessSnapshot] = []
        for pid in processIDs() {
            guard let process = process(pid, acceptingComm: accept) else { continue }
            result.append(process)
        }
        return result
    }

    /// The numeric entries of the procfs root (`opendir`/`readdir`, without building a name for every
    /// other entry); empty when the root cannot be read.
    func processIDs() -> [Int32] {
        guard let directory = opendir(root) else { return [] }
        defer { closedir(directory) }
        var pids: [Int32] = []
        while let entry = readdir(directory) {
            let pid = withUnsafeBytes(of: entry.pointee.d_name) { raw -> Int32? in
                var value: Int32 = 0
                for byte in raw {
                    if byte == 0 { break }
                    guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), value < Int32.max / 10 else {
                        return nil
                    }
                    value = value * 10 + Int32(byte - UInt8(ascii: "0"))
                }
                return value > 0 ? value : nil
            }
            if let pid { pids.append(pid) }
        }
        return pids
    }

    /// Process (or thread) `pid`, read the way `snapshot()` reads each process; nil when it is gone, is a
    /// kernel thread or zombie, or its `comm` fails `accept`. A thread ID gives the thread's name and
    /// its process's command line; `threadGroup(of:)` says which process that is.
    public func process(_ pid: Int32, acceptingComm accept: (String) -> Bool = { _ in true }) -> ProcessSnapshot? {
        guard let name = comm(pid), accept(name) else { return nil }
        guard let cmdline = Self.read("\(root)/\(pid)/cmdline", oneRecord: true) else { return nil }
        return Self.snapshot(pid: pid, comm: name, commandLine: cmdline)
    }

    /// The process a task's raw `comm` and `cmdline` describe; nil for an empty command line (a kernel
    /// thread or a zombie).
    static func snapshot(pid: Int32, comm: UnsafeBufferPointer<UInt8>, commandLine: UnsafeBufferPointer<UInt8>)
        -> ProcessSnapshot?
    {
        snapshot(pid: pid, comm: commName(comm), commandLine: commandLine)
    }

    private static func snapshot<Bytes: Collection<UInt8>>(pid: Int32, comm: String, commandLine: Bytes)
        -> ProcessSnapshot?
    {
        guard !commandLine.isEmpty else { return nil }
        let arguments = commandLine.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        return ProcessSnapshot(
            pid: pid, comm: comm, arguments: arguments.last == "" ? Array(arguments.dropLast()) : arguments)
    }

    /// The `comm` (the kernel's 15-byte name) of process or thread `pid`; nil when it is gone.
    public func comm(_ pid: Int32) -> String? {
        guard let comm = Self.read("\(root)/\(pid)/comm", oneRecord: true) else { return nil }
        return comm.withUnsafeBufferPointer(Self.commName)
    }

    /// A raw `comm` as text, newlines trimmed from both ends. Names in ASCII (nearly all) are trimmed as
    /// bytes; others as Foundation trims them, which knows the Unicode newlines.
    static func commName(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        guard bytes.allSatisfy({ $0 < 0x80 }) else {
            return String(decoding: bytes, as: UTF8.self).trimmingLineBreaks()
        }
        // U+000A to U+000D are CharacterSet.newlines' ASCII members.
        let newline: (UInt8) -> Bool = { (0x0A...0x0D).contains($0) }
        var start = 0
        var end = bytes.count
        while start < end, newline(bytes[start]) { start += 1 }
        while end > start, newline(bytes[end - 1]) { end -= 1 }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// The process a task belongs to (the `Tgid:` line of `/proc/PID/status`): itself for a process, its
    /// process for a thread; nil when it is gone.
    public func threadGroup(of pid: Int32) -> Int32? {
        guard let status = Self.read("\(root)/\(pid)/status", oneRecord: true) else { return nil }
        for line in String(decoding: status, as: UTF8.self).split(separator: "\n") where line.hasPrefix("Tgid:") {
            return Int32(line.dropFirst(5).trimmingSpaces())
        }
        return nil
    }

    /// The most recently created process or thread ID in this PID namespace: the last field of
    /// `/proc/loadavg` (`0.52 0.58 0.59 2/148 28664`). It changes only when a task is created, so reading
    /// it is a cheap test for "something new started".
    public func newestPID() -> Int32? {
        guard let bytes = Self.read(root + "/loadavg") else { return nil }
        return Self.newestPID(inLoadAverage: String(decoding: bytes, as: UTF8.self))
    }

    /// The last field of a `/proc/loadavg` line, or nil when it does not read as one.
    static func newestPID(inLoadAverage text: String) -> Int32? {
        let fields = text.split(whereSeparator: \.isWhitespace)
        guard fields.count == 5, fields[3].contains("/") else { return nil }
        return Int32(fields[4]).flatMap { $0 > 0 ? $0 : nil }
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
    /// `oneRecord` is for files the kernel prints in one go (`comm`, `cmdline`, `status`): a read shorter
    /// than the buffer was their end, which saves the second read. A table of many records
    /// (`/proc/net/tcp`) comes a page of whole lines at a time, short reads included, so it is read on
    /// to the end.
    static func read(_ path: String, limit: Int = 65_536, complete: Bool = false, oneRecord: Bool = false)
        -> [UInt8]?
    {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        // A buffer on the stack: a scan reads two small files per process, several times a second.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { buffer in
            while bytes.count < limit {
                let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<count]))
                if oneRecord && count < buffer.count { break }
            }
        }
        if complete, bytes.count >= limit { return nil }
        return bytes
    }
}
