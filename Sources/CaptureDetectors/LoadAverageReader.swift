import FoundationEssentials
import Glibc

/// Reads the newest PID from `/proc/loadavg` through one descriptor kept open: each reading is a single
/// `pread(2)` at offset 0, which makes the kernel print the file afresh, so a 10 ms poll costs one system
/// call and no allocation. The descriptor is closed in `deinit`.
final class LoadAverageReader: Sendable {
    /// The open `loadavg` file, or -1 when it could not be opened. Never changed after `init`, and
    /// `pread` keeps no file position, so threads may read at once.
    private let descriptor: Int32
    private let table: ProcessTable

    /// Opens `loadavg` under `table`'s root.
    init(table: ProcessTable) {
        self.table = table
        descriptor = open(table.root + "/loadavg", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// The newest PID now, as `ProcessTable.newestPID()` reads it; nil when it cannot be read.
    func newestPID() -> Int32? {
        guard descriptor >= 0 else { return table.newestPID() }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer in
            let count = pread(descriptor, buffer.baseAddress, buffer.count, 0)
            guard count > 0 else { return nil }
            return ProcessTable.newestPID(inLoadAverage: UnsafeBufferPointer(rebasing: buffer[0..<count]))
        }
    }
}

extension ProcessTable {
    /// The last field of a `/proc/loadavg` line as bytes, or nil when the line does not read as one.
    static func newestPID(inLoadAverage bytes: UnsafeBufferPointer<UInt8>) -> Int32? {
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == UInt8(ascii: " ") { end -= 1 }
        var start = end
        while start > 0, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[start - 1]) { start -= 1 }
        guard start < end, end - start <= 10, start > 0, bytes[start - 1] == UInt8(ascii: " ") else { return nil }
        // The field before it is `running/total`.
        guard bytes[0..<start].contains(UInt8(ascii: "/")) else { return nil }
        var value: Int64 = 0
        for index in start..<end { value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
        return value > 0 && value <= Int64(Int32.max) ? Int32(value) : nil
    }
}
