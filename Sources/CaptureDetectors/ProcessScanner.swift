import FoundationEssentials
import Glibc
import Synchronization

/// The process scanner's reads of procfs, made cheap enough to run four times a second beside a fast
/// newest-PID poll. Files are opened relative to one descriptor of the procfs root (no walk of the
/// root's own path), and each process's `comm` and `cmdline` stay open from one scan to the next, so a
/// scan reads them again with one `pread(2)` each and no open or close (procfs prints them afresh at
/// every read from offset 0, after an exec too). Bytes go into a buffer on the stack, and a process
/// whose `comm` and command line are byte for byte what the last scan read keeps that scan's verdict:
/// only a new or changed process is decoded into strings and classified. Every scan still reads both
/// files of every process, so a recorder that renames itself or execs late is seen by the next scan, as
/// before.
///
/// A kept file of a task that has exited reads as an error (ESRCH), so a PID used again by a new process
/// is opened afresh. At most `keptLimit` processes keep their files (a quarter of the descriptor limit,
/// at most 256 processes); the others are opened and closed at each scan. Everything is closed in
/// `deinit`.
final class ProcessScanner: Sendable {
    /// A process's two files, open.
    private struct Files {
        var comm: Int32
        var commandLine: Int32

        func close() {
            Glibc.close(comm)
            Glibc.close(commandLine)
        }
    }

    /// One process as the last scan read it, and its verdict.
    private struct Entry {
        /// `comm` then the command line, raw.
        var bytes: [UInt8]
        /// How many of `bytes` are `comm`.
        var commCount: Int
        var detection: ProcessDetection?
        /// The scan that last saw it, so the processes gone since are dropped.
        var generation: UInt64
        /// Its files, when kept open.
        var files: Files?
    }

    private struct Cache {
        var entries: [Int32: Entry] = [:]
        var generation: UInt64 = 0
        /// How many entries keep their files.
        var kept = 0
    }

    let table: ProcessTable
    let classifier: ProcessClassifier
    /// The procfs root, opened as a directory, or -1 when it could not be; never changed after `init`,
    /// and only used in `openat`, so threads may use it at once.
    private let root: Int32
    /// The most processes whose files are kept open.
    let keptLimit: Int
    private let cache = Mutex(Cache())

    /// The bytes kept on the stack for a task's `comm` (the kernel prints at most 64) and for the start
    /// of its command line; a longer command line is read on into an array.
    static let commCapacity = 256
    static let commandLineChunk = 4096
    /// The most of a command line read, as `ProcessTable.read` does.
    static let commandLineLimit = 65_536

    /// A scanner over `table`'s root with `classifier`; `keptLimit` defaults to a quarter of the
    /// descriptor limit (two files a process), at most 256 processes.
    init(table: ProcessTable, classifier: ProcessClassifier, keptLimit: Int? = nil) {
        self.table = table
        self.classifier = classifier
        root = open(table.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        // sysconf(_SC_OPEN_MAX) is the soft RLIMIT_NOFILE.
        let descriptors = sysconf(Int32(_SC_OPEN_MAX))
        self.keptLimit = keptLimit ?? min(256, descriptors > 0 ? descriptors / 8 : 128)
    }

    deinit {
        cache.withLock { cache in
            for entry in cache.entries.values { entry.files?.close() }
        }
        if root >= 0 { close(root) }
    }

    /// How many processes keep their files open now.
    var keptCount: Int { cache.withLock { $0.kept } }

    /// The descriptors of `pid`'s kept `comm` and `cmdline`, or nil when they are not kept.
    func keptDescriptors(of pid: Int32) -> [Int32]? {
        cache.withLock { cache in cache.entries[pid]?.files.map { [$0.comm, $0.commandLine] } }
    }

    /// The recorders among the running processes but `skipped`: what
    /// `table.snapshot().filter { $0.pid != skipped }.compactMap(classifier.classify)` finds.
    func scan(skipping skipped: Int32? = nil) -> [ProcessDetection] {
        let pids = table.processIDs()
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.commCapacity + Self.commandLineChunk) {
            buffer in
            cache.withLock { cache in
                cache.generation &+= 1
                let generation = cache.generation
                var found: [ProcessDetection] = []
                for pid in pids where pid != skipped {
                    if let detection = look(at: pid, buffer: buffer, cache: &cache, generation: generation) {
                        found.append(detection)
                    }
                }
                // The processes gone since the last scan.
                for entry in cache.entries.values where entry.generation != generation {
                    if let files = entry.files {
                        files.close()
                        cache.kept -= 1
                    }
                }
                cache.entries = cache.entries.filter { $0.value.generation == generation }
                return found
            }
        }
    }

    /// Task `pid` (a process, or a thread read as its process's command line) read whole and parsed as
    /// `ProcessTable.process(_:)` does; nil when it is gone, a kernel thread or a zombie.
    func process(_ pid: Int32) -> ProcessSnapshot? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.commCapacity + Self.commandLineChunk) {
            buffer in
            guard let files = openFiles(pid) else { return nil }
            defer { files.close() }
            return Self.read(files, buffer: buffer) { comm, commandLine in
                ProcessTable.snapshot(pid: pid, comm: comm, commandLine: commandLine)
            } ?? nil
        }
    }

    /// Opens `pid`'s file `name` (`comm`, `cmdline`) read-only; -1 when it is gone. The caller closes it.
    func openFile(_ pid: Int32, _ name: StaticString) -> Int32 {
        guard root >= 0 else { return Glibc.open("\(table.root)/\(pid)/\(name)", O_RDONLY | O_CLOEXEC) }
        // "PID/name" and a NUL, without building a String: ten digits, a slash and the name.
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 16 + name.utf8CodeUnitCount) { path in
            var digits = 0
            var rest = pid
            repeat {
                digits += 1
                rest /= 10
            } while rest > 0
            rest = pid
            for index in stride(from: digits - 1, through: 0, by: -1) {
                path[index] = CChar(48 + rest % 10)
                rest /= 10
            }
            path[digits] = CChar(UInt8(ascii: "/"))
            name.withUTF8Buffer { bytes in
                for (offset, byte) in bytes.enumerated() { path[digits + 1 + offset] = CChar(bitPattern: byte) }
            }
            path[digits + 1 + name.utf8CodeUnitCount] = 0
            return openat(root, path.baseAddress!, O_RDONLY | O_CLOEXEC)
        }
    }

    /// `pid`'s `comm` and `cmdline`, both open; nil when it is gone.
    private func openFiles(_ pid: Int32) -> Files? {
        let comm = openFile(pid, "comm")
        guard comm >= 0 else { return nil }
        let commandLine = openFile(pid, "cmdline")
        guard commandLine >= 0 else {
            close(comm)
            return nil
        }
        return Files(comm: comm, commandLine: commandLine)
    }

    /// Reads `descriptor` from `offset` into `buffer` until a short read (procfs prints `comm` and
    /// `cmdline` in one go), the end, or a full buffer; the count, or -1 on an error (ESRCH: the task
    /// has exited).
    static func readRecord(_ descriptor: Int32, at offset: Int = 0, into buffer: UnsafeMutableBufferPointer<UInt8>)
        -> Int
    {
        var count = 0
        while count < buffer.count {
            let got = pread(descriptor, buffer.baseAddress! + count, buffer.count - count, off_t(offset + count))
            if got < 0 && errno == EINTR { continue }
            if got < 0 { return count > 0 ? count : -1 }
            if got == 0 { break }
            count += got
            // A full buffer may have more behind it; anything shorter was the record's end.
            if count < buffer.count { break }
        }
        return count
    }

    /// Reads a process's `comm` and command line (raw, the command line up to `commandLineLimit` bytes)
    /// from offset 0 and hands them to `body`; nil when either cannot be read.
    private static func read<Result>(
        _ files: Files, buffer: UnsafeMutableBufferPointer<UInt8>,
        _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result? {
        let commBuffer = UnsafeMutableBufferPointer(rebasing: buffer[0..<commCapacity])
        let chunk = UnsafeMutableBufferPointer(rebasing: buffer[commCapacity...])
        let commCount = readRecord(files.comm, into: commBuffer)
        guard commCount >= 0 else { return nil }
        let comm = UnsafeBufferPointer(rebasing: commBuffer[0..<commCount])
        let count = readRecord(files.commandLine, into: chunk)
        guard count >= 0 else { return nil }
        guard count == chunk.count else { return body(comm, UnsafeBufferPointer(rebasing: chunk[0..<count])) }
        // A long command line (a browser's, a JVM's): the rest into an array, as `ProcessTable.read` does.
        var whole = Array(chunk)
        var more = [UInt8](repeating: 0, count: commandLineChunk)
        while whole.count < commandLineLimit {
            let got = more.withUnsafeMutableBufferPointer { readRecord(files.commandLine, at: whole.count, into: $0) }
            if got <= 0 { break }
            whole.append(contentsOf: more[0..<got])
            if got < more.count { break }
        }
        return whole.withUnsafeBufferPointer { body(comm, $0) }
    }

    /// Whether `kept` is `comm` followed by `commandLine`.
    private static func same(
        _ kept: [UInt8], _ comm: UnsafeBufferPointer<UInt8>, _ commandLine: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        guard kept.count == comm.count + commandLine.count else { return false }
        return kept.withUnsafeBytes { kept in
            func equal(_ offset: Int, _ part: UnsafeBufferPointer<UInt8>) -> Bool {
                guard let start = part.baseAddress, !part.isEmpty else { return true }
                return memcmp(kept.baseAddress! + offset, start, part.count) == 0
            }
            return equal(0, comm) && equal(comm.count, commandLine)
        }
    }

    /// The verdict on `pid` in a scan: the last scan's when its files read the same, else classified
    /// anew; nil too when it is gone.
    private func look(
        at pid: Int32, buffer: UnsafeMutableBufferPointer<UInt8>, cache: inout Cache, generation: UInt64
    ) -> ProcessDetection? {
        var entry = cache.entries[pid]
        if let files = entry?.files {
            // Kept from an earlier scan: an error means that process exited (a listed PID is a new one).
            if let verdict = classify(pid, files, buffer: buffer, entry: &entry, generation: generation) {
                cache.entries[pid] = entry
                return verdict
            }
            files.close()
            cache.kept -= 1
            entry = nil
        }
        guard let files = openFiles(pid) else {
            cache.entries[pid] = nil
            return nil
        }
        guard let verdict = classify(pid, files, buffer: buffer, entry: &entry, generation: generation) else {
            files.close()
            cache.entries[pid] = nil
            return nil
        }
        if cache.kept < keptLimit {
            entry?.files = files
            cache.kept += 1
        } else {
            files.close()
        }
        cache.entries[pid] = entry
        return verdict
    }

    /// Reads `files` and updates `entry`: `.some(verdict)`, or nil when they cannot be read.
    private func classify(
        _ pid: Int32, _ files: Files, buffer: UnsafeMutableBufferPointer<UInt8>, entry: inout Entry?,
        generation: UInt64
    ) -> ProcessDetection?? {
        Self.read(files, buffer: buffer) { comm, commandLine -> ProcessDetection? in
            if var known = entry, known.commCount == comm.count, Self.same(known.bytes, comm, commandLine) {
                known.generation = generation
                entry = known
                return known.detection
            }
            let detection = ProcessTable.snapshot(pid: pid, comm: comm, commandLine: commandLine).flatMap(
                classifier.classify)
            entry = Entry(
                bytes: Array(comm) + Array(commandLine), commCount: comm.count, detection: detection,
                generation: generation, files: entry?.files)
            return detection
        }
    }
}
