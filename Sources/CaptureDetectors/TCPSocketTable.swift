import FoundationEssentials
import Glibc

/// One row of `/proc/net/tcp` or `/proc/net/tcp6`: a TCP socket of the network namespace, its two ends,
/// its state and the inode that `/proc/PID/fd` links name (`socket:[INODE]`).
public struct TCPSocket: Sendable, Hashable {
    /// The kernel's TCP state number (`st` column): 1 is ESTABLISHED, 10 is LISTEN.
    public var state: UInt8
    /// This end.
    public var local: SocketAddress
    /// The other end (all zeros for a listener).
    public var remote: SocketAddress
    /// The socket's inode.
    public var inode: UInt64

    /// The `st` value of an established connection.
    public static let established: UInt8 = 0x01

    /// Creates a row.
    public init(state: UInt8, local: SocketAddress, remote: SocketAddress, inode: UInt64) {
        self.state = state
        self.local = local
        self.remote = remote
        self.inode = inode
    }
}

/// An IP address and port as text: `127.0.0.1:5900`, `[2001:db8::1]:5900`. An IPv4-mapped IPv6 address
/// is shown as the IPv4 address it maps.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address, without brackets.
    public var host: String
    /// The port.
    public var port: UInt16

    /// Creates an address.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Reads the kernel's TCP socket tables, `/proc/net/tcp` (IPv4) and `/proc/net/tcp6` (IPv6).
///
/// Each row prints an address as the hexadecimal of 32-bit words in the host's byte order (`0100007F`
/// is 127.0.0.1 on a little-endian machine) and the port in plain hexadecimal. Rows that do not read as
/// such (the header, a truncated last line) are skipped.
public enum TCPSocketTable {
    /// The sockets listed in `text`, the contents of a `tcp` or `tcp6` file.
    public static func parse(_ text: String) -> [TCPSocket] {
        var sockets: [TCPSocket] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // sl, local, remote, st, tx:rx, tr:when, retrnsmt, uid, timeout, inode, …
            guard fields.count >= 10, fields[0].hasSuffix(":"),
                let local = address(fields[1]), let remote = address(fields[2]),
                let state = UInt8(fields[3], radix: 16), let inode = UInt64(fields[9])
            else { continue }
            sockets.append(TCPSocket(state: state, local: local, remote: remote, inode: inode))
        }
        return sockets
    }

    /// The most a table is read: 150 bytes a row, about 200,000 sockets.
    public static let limit = 32 << 20

    /// The sockets of the network namespace `pid` lives in (`/proc/PID/net/tcp` and `tcp6` under `root`),
    /// or nil when neither table can be read whole (gone, unreadable, or longer than `limit`). A busy
    /// machine lists thousands of sockets, mostly TIME_WAIT, so the tables are read to the end.
    public static func read(pid: Int32, root: String = "/proc") -> [TCPSocket]? {
        var tables: [[UInt8]] = []
        for name in ["tcp", "tcp6"] {
            let path = "\(root)/\(pid)/net/\(name)"
            guard let table = ProcessTable.read(path, limit: limit, complete: true) else {
                // A missing tcp6 (IPv6 disabled) is fine; one cut short is not.
                if name == "tcp6", !FileManager.default.fileExists(atPath: path) { continue }
                return nil
            }
            tables.append(table)
        }
        guard !tables.isEmpty else { return nil }
        return tables.flatMap { parse(String(decoding: $0, as: UTF8.self)) }
    }

    /// `HEXADDRESS:HEXPORT`, with 8 (IPv4) or 32 (IPv6) hexadecimal digits of address.
    static func address(_ field: Substring) -> SocketAddress? {
        let parts = field.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1], radix: 16) else { return nil }
        let hex = parts[0]
        guard hex.count == 8 || hex.count == 32 else { return nil }
        // Each 8-digit word is a 32-bit value in host order whose bytes in memory are the network-order
        // address bytes.
        var bytes: [UInt8] = []
        var start = hex.startIndex
        while start < hex.endIndex {
            let end = hex.index(start, offsetBy: 8)
            guard let word = UInt32(hex[start..<end], radix: 16) else { return nil }
            withUnsafeBytes(of: word) { bytes.append(contentsOf: $0) }
            start = end
        }
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
        }
        if bytes.count == 4 { return SocketAddress(host: bytes.map(String.init).joined(separator: "."), port: port) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let written = bytes.withUnsafeBytes { raw in
            inet_ntop(AF_INET6, raw.baseAddress, &text, socklen_t(text.count))
        }
        guard written != nil else { return nil }
        let characters = text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return SocketAddress(host: String(decoding: characters, as: UTF8.self), port: port)
    }
}
