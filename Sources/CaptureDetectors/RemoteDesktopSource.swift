public import CaptureMonitor
import FoundationEssentials

/// What one look at the running remote-viewing servers found.
public struct RemoteDesktopScan: Sendable, Hashable {
    /// A server process found running.
    public struct Server: Sendable, Hashable {
        /// Its process ID.
        public var pid: Int32
        /// Its name.
        public var app: String

        /// Creates a sighting.
        public init(pid: Int32, app: String) {
            self.pid = pid
            self.app = app
        }
    }

    /// Viewers connected, server by server.
    public var viewings: [RemoteViewing] = []
    /// Servers running with no viewer.
    public var idle: [Server] = []
    /// Servers whose sockets could not be read (another user's process), so whether anyone watches is
    /// not known.
    public var unreadable: [Server] = []

    /// Creates an empty scan (no server running).
    public init() {}

    /// Looks at every server of `servers` running under the procfs `table`: its socket inodes from
    /// `/proc/PID/fd`, matched against the TCP tables of its own network namespace.
    public init(table: ProcessTable, servers: RemoteDesktopServers) {
        for process in table.snapshot(acceptingComm: { servers.server(comm: $0) != nil }) {
            guard let server = servers.server(comm: process.comm) else { continue }
            let found = Server(pid: process.pid, app: server.name)
            guard let inodes = table.socketInodes(pid: process.pid),
                let sockets = TCPSocketTable.read(pid: process.pid, root: table.root)
            else {
                unreadable.append(found)
                continue
            }
            let viewers = RemoteDesktopServers.viewers(
                of: server, pid: process.pid, inodes: inodes, sockets: sockets)
            if viewers.isEmpty { idle.append(found) } else { viewings.append(contentsOf: viewers) }
        }
    }

    /// The report: `capturing` while a viewer is connected (naming the server, its PID and the peer);
    /// else `unknown` when a server's sockets could not be read; else `clear`, noting a server that runs
    /// with no viewer.
    public var verdict: PollVerdict {
        if let first = viewings.first {
            let more = viewings.count > 1 ? " (and \(viewings.count - 1) more)" : ""
            return PollVerdict(
                .capturing, reason: "\(first.app) pid \(first.pid) has a viewer connected from \(first.peer)\(more)",
                pid: first.pid, app: first.app, confidence: 0.95)
        }
        if let first = unreadable.first {
            return PollVerdict(
                .unknown,
                reason: "\(first.app) pid \(first.pid) is running and its sockets cannot be read, "
                    + "so a viewer may be connected", pid: first.pid, app: first.app, confidence: 0.5)
        }
        if let first = idle.first {
            let more = idle.count > 1 ? " (and \(idle.count - 1) more)" : ""
            return PollVerdict(
                .clear, reason: "\(first.app) pid \(first.pid) is running with no viewer connected\(more)",
                pid: first.pid, app: first.app, confidence: 0.9)
        }
        return PollVerdict(.clear, reason: "no remote-desktop server running", confidence: 0.9)
    }
}

/// The remote-desktop watcher as a capture source: every `interval` seconds it looks for a remote-viewing
/// server (x11vnc, Xvnc, xrdp, …) with a viewer connected, and reports what `RemoteDesktopScan` finds,
/// each report leased like the process scanner's.
public final class RemoteDesktopSource: LiveCaptureSource {
    public let name: String
    /// Seconds between scans.
    public let interval: Double
    /// Seconds each report is believed.
    public let lease: Double
    private let scan: @Sendable () -> RemoteDesktopScan
    private let loop: PollingLoop

    /// Creates a watcher over the procfs `table` for `servers`.
    public convenience init(
        interval: Double = 0.25, table: ProcessTable = ProcessTable(),
        servers: RemoteDesktopServers = .builtIn
    ) {
        self.init(interval: interval) { RemoteDesktopScan(table: table, servers: servers) }
    }

    /// Creates a source around any scan function.
    public init(
        name: String = "remote-desktop", interval: Double = 0.25, lease: Double? = nil,
        scan: @escaping @Sendable () -> RemoteDesktopScan
    ) {
        self.name = name
        self.interval = interval
        self.lease = lease ?? PollingLoop.lease(for: interval)
        self.scan = scan
        loop = PollingLoop(name: name, interval: interval, lease: self.lease)
    }

    public func start(_ reporter: CaptureReporter) {
        let scan = scan
        loop.start(reporter) { scan().verdict }
    }

    public func stop() {
        loop.stop()
    }
}
