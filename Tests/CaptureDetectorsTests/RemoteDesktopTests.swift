import CaptureDetectors
import CaptureMonitor
import Foundation
import Testing

/// The recorded `/proc/net/tcp` text of an x11vnc with viewers (see Fixtures/README.md).
func remoteDesktopFixture(_ name: String) throws -> String {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/remote-desktop/\(name)")
    return try String(contentsOf: url, encoding: .utf8)
}

/// A procfs tree on disk with one process: its `comm`, `cmdline`, `fd` links and TCP tables, as the
/// kernel lays them out. The `fd` links point at `socket:[INODE]` names, exactly what `readlink` gives on
/// a real `/proc`.
struct FakeProcfs {
    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("procfs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    func addProcess(
        _ pid: Int32, comm: String, arguments: [String], sockets: [Int: UInt64]?, tcp: String, tcp6: String
    ) throws {
        let directory = root.appendingPathComponent("\(pid)")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("net"), withIntermediateDirectories: true)
        try Data((comm + "\n").utf8).write(to: directory.appendingPathComponent("comm"))
        try Data(arguments.map { $0 + "\0" }.joined().utf8).write(to: directory.appendingPathComponent("cmdline"))
        try Data(tcp.utf8).write(to: directory.appendingPathComponent("net/tcp"))
        try Data(tcp6.utf8).write(to: directory.appendingPathComponent("net/tcp6"))
        guard let sockets else { return }
        let fd = directory.appendingPathComponent("fd")
        try FileManager.default.createDirectory(at: fd, withIntermediateDirectories: true)
        for (number, inode) in sockets {
            try FileManager.default.createSymbolicLink(
                atPath: fd.appendingPathComponent("\(number)").path, withDestinationPath: "socket:[\(inode)]")
        }
        try FileManager.default.createSymbolicLink(
            atPath: fd.appendingPathComponent("0").path, withDestinationPath: "/dev/null")
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

@Suite struct TCPSocketTableTests {
    @Test func readsTheRecordedIPv4Table() throws {
        let sockets = TCPSocketTable.parse(try remoteDesktopFixture("x11vnc-viewer-tcp.txt"))
        #expect(sockets.count == 4)
        #expect(
            sockets[0]
                == TCPSocket(
                    state: 0x0A, local: SocketAddress(host: "0.0.0.0", port: 2024),
                    remote: SocketAddress(host: "0.0.0.0", port: 0),
                    inode: 1087))
        // x11vnc's end of the viewer's connection.
        #expect(
            sockets[3]
                == TCPSocket(
                    state: TCPSocket.established, local: SocketAddress(host: "127.0.0.1", port: 5950),
                    remote: SocketAddress(host: "127.0.0.1", port: 38162), inode: 276458))
    }

    @Test func readsTheRecordedIPv6Table() throws {
        let sockets = TCPSocketTable.parse(try remoteDesktopFixture("x11vnc-viewer-tcp6.txt"))
        #expect(sockets.map(\.inode) == [272989, 275143, 275144])
        #expect(sockets[2].local.description == "[::1]:5950")
        #expect(sockets[2].remote.description == "[::1]:35616")
        #expect(sockets[2].state == TCPSocket.established)
    }

    @Test func showsAnIPv4MappedPeerAsIPv4AndKeepsOtherIPv6() {
        let text = """
              0: 0000000000000000FFFF00000100007F:173E 0000000000000000FFFF00000A01A8C0:D431 01 00000000:00000000 00:00000000 00000000  1000 0 4242 1 0 20 4 30 10 -1
              1: B80D0120000000000000000001000000:173E 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 0 4343 1 0 20 4 30 10 -1
            """
        let sockets = TCPSocketTable.parse(text)
        #expect(sockets.map(\.remote.description) == ["192.168.1.10:54321", "[::]:0"])
        #expect(sockets.map(\.local.description) == ["127.0.0.1:5950", "[2001:db8::1]:5950"])
    }

    @Test func skipsRowsThatDoNotReadAsSockets() {
        let text = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:173E 0100007F:9512 01 00000000:00000000 00:00000000 00000000     0        0 276458 1
               1: 0100007G:173E 0100007F:9512 01 00000000:00000000 00:00000000 00000000     0        0 1 1
               2: 0100007F:173E 0100007F
               3: 01007F:173E 0100007F:9512 01 00000000:00000000 00:00000000 00000000     0        0 2 1
            """
        #expect(TCPSocketTable.parse(text).map(\.inode) == [276458])
    }
}

@Suite struct RemoteDesktopServersTests {
    /// x11vnc's sockets when the tables were recorded: its two listeners and its ends of both viewers.
    static let x11vncInodes: Set<UInt64> = [272985, 272989, 276458, 275144]

    func recordedSockets() throws -> [TCPSocket] {
        TCPSocketTable.parse(try remoteDesktopFixture("x11vnc-viewer-tcp.txt"))
            + TCPSocketTable.parse(try remoteDesktopFixture("x11vnc-viewer-tcp6.txt"))
    }

    @Test func theServersConnectionsAreItsViewers() throws {
        let x11vnc = try #require(RemoteDesktopServers.builtIn.server(comm: "x11vnc"))
        let viewers = RemoteDesktopServers.viewers(
            of: x11vnc, pid: 28248, inodes: Self.x11vncInodes, sockets: try recordedSockets())
        #expect(viewers.map(\.peer.description) == ["127.0.0.1:38162", "[::1]:35616"])
        #expect(viewers.allSatisfy { $0.pid == 28248 && $0.app == "x11vnc" })
    }

    @Test func listenersAndSocketsOfOthersAreNotViewers() throws {
        let x11vnc = try #require(RemoteDesktopServers.builtIn.server(comm: "x11vnc"))
        // Its listeners only: nobody is watching.
        #expect(
            RemoteDesktopServers.viewers(of: x11vnc, pid: 1, inodes: [272985, 272989], sockets: try recordedSockets())
                .isEmpty)
        // Sockets the server does not hold (the viewer's own ends) are not its viewers.
        #expect(
            RemoteDesktopServers.viewers(of: x11vnc, pid: 1, inodes: [999], sockets: try recordedSockets()).isEmpty)
    }

    @Test func anXConnectionIsNotAViewer() throws {
        let xvnc = try #require(RemoteDesktopServers.builtIn.server(comm: "Xtigervnc"))
        #expect(xvnc.name == "Xvnc")
        // Xvnc serving an X client over TCP on port 6001, and x11vnc talking to its display on 6000.
        let text = """
               0: 0100007F:1771 0100007F:B000 01 00000000:00000000 00:00000000 00000000  1000 0 10 1 0 20 4 30 10 -1
               1: 0100007F:C000 0100007F:1770 01 00000000:00000000 00:00000000 00000000  1000 0 11 1 0 20 4 30 10 -1
            """
        let sockets = TCPSocketTable.parse(text)
        #expect(RemoteDesktopServers.viewers(of: xvnc, pid: 1, inodes: [10, 11], sockets: sockets).isEmpty)
    }

    @Test func rustDesksRendezvousConnectionIsNotAViewerButItsRelayIs() throws {
        let rustdesk = try #require(RemoteDesktopServers.builtIn.server(comm: "rustdesk"))
        let text = """
               0: 0A00020F:D000 08080808:527C 01 00000000:00000000 00:00000000 00000000  1000 0 20 1 0 20 4 30 10 -1
               1: 0A00020F:D001 08080808:527D 01 00000000:00000000 00:00000000 00000000  1000 0 21 1 0 20 4 30 10 -1
            """
        let sockets = TCPSocketTable.parse(text)
        #expect(RemoteDesktopServers.viewers(of: rustdesk, pid: 1, inodes: [20], sockets: sockets).isEmpty)
        #expect(
            RemoteDesktopServers.viewers(of: rustdesk, pid: 1, inodes: [20, 21], sockets: sockets).map(
                \.peer.description) == ["8.8.8.8:21117"])
    }

    @Test(arguments: [
        ("x11vnc", "x11vnc"), ("x0vncserver", "x0vncserver"), ("Xvnc", "Xvnc"), ("wayvnc", "wayvnc"),
        ("gnome-remote-de", "gnome-remote-desktop"), ("krfb", "krfb"), ("xrdp", "xrdp"), ("sunshine", "sunshine"),
        ("rustdesk", "rustdesk"),
    ])
    func knowsEachServerByItsComm(_ comm: String, _ name: String) {
        #expect(RemoteDesktopServers.builtIn.server(comm: comm)?.name == name)
    }

    @Test func aViewerIsNotARecorderNameAlone() {
        #expect(RemoteDesktopServers.builtIn.server(comm: "xtightvncviewer") == nil)
        #expect(RemoteDesktopServers.builtIn.server(comm: "xrdp-sesman") == nil)
    }
}

@Suite struct RemoteDesktopScanTests {
    @Test func aServerWithAViewerIsCapturingAndNamesThePeer() throws {
        let procfs = try FakeProcfs()
        defer { procfs.remove() }
        try procfs.addProcess(
            4242, comm: "x11vnc", arguments: ["x11vnc", "-display", ":77"],
            sockets: [8: 272985, 9: 272989, 11: 276458], tcp: try remoteDesktopFixture("x11vnc-viewer-tcp.txt"),
            tcp6: try remoteDesktopFixture("x11vnc-viewer-tcp6.txt"))
        // A viewer process is not a server, whatever sockets it holds.
        try procfs.addProcess(
            4343, comm: "xtightvncviewer", arguments: ["xtightvncviewer", "localhost::5950"], sockets: [4: 274895],
            tcp: try remoteDesktopFixture("x11vnc-viewer-tcp.txt"), tcp6: "")
        let scan = RemoteDesktopScan(table: ProcessTable(root: procfs.root.path), servers: .builtIn)
        #expect(
            scan.viewings == [
                RemoteViewing(pid: 4242, app: "x11vnc", peer: SocketAddress(host: "127.0.0.1", port: 38162))
            ])
        let verdict = scan.verdict
        #expect(verdict.state == .capturing)
        #expect(verdict.pid == 4242 && verdict.app == "x11vnc")
        #expect(verdict.reason == "x11vnc pid 4242 has a viewer connected from 127.0.0.1:38162")
    }

    @Test func aViewerListedAfterThousandsOfSocketsIsSeen() throws {
        // A busy machine (a load test just ran) lists thousands of TIME_WAIT sockets before the viewer's.
        let recorded = try remoteDesktopFixture("x11vnc-viewer-tcp.txt").split(separator: "\n")
        let waiting = (0..<3000).map { index in
            String(
                format:
                    "%4d: 0100007F:%04X 0100007F:1F90 06 00000000:00000000 03:00000F9E 00000000     0        0 0 3 0000000000000000",
                index + 10, 20000 + index)
        }
        let table = ([String(recorded[0])] + waiting + recorded.dropFirst().map(String.init)).joined(separator: "\n")
        #expect(table.utf8.count > 4 * 65_536)
        let procfs = try FakeProcfs()
        defer { procfs.remove() }
        try procfs.addProcess(4242, comm: "x11vnc", arguments: ["x11vnc"], sockets: [11: 276458], tcp: table, tcp6: "")
        let scan = RemoteDesktopScan(table: ProcessTable(root: procfs.root.path), servers: .builtIn)
        #expect(scan.viewings.map(\.peer.description) == ["127.0.0.1:38162"])
    }

    @Test func aServerWithNoViewerIsClearWithANotice() throws {
        let procfs = try FakeProcfs()
        defer { procfs.remove() }
        try procfs.addProcess(
            4242, comm: "x11vnc", arguments: ["x11vnc"], sockets: [8: 272985, 9: 272989],
            tcp: try remoteDesktopFixture("x11vnc-viewer-tcp.txt"),
            tcp6: try remoteDesktopFixture("x11vnc-viewer-tcp6.txt"))
        let scan = RemoteDesktopScan(table: ProcessTable(root: procfs.root.path), servers: .builtIn)
        #expect(scan.idle == [RemoteDesktopScan.Server(pid: 4242, app: "x11vnc")])
        #expect(scan.verdict.state == .clear)
        #expect(scan.verdict.reason == "x11vnc pid 4242 is running with no viewer connected")
    }

    @Test func aServerWhoseSocketsCannotBeReadIsUnknown() throws {
        let procfs = try FakeProcfs()
        defer { procfs.remove() }
        // No fd folder: what another user's process looks like to a normal user.
        try procfs.addProcess(
            77, comm: "xrdp", arguments: ["/usr/sbin/xrdp"], sockets: nil, tcp: "", tcp6: "")
        let scan = RemoteDesktopScan(table: ProcessTable(root: procfs.root.path), servers: .builtIn)
        #expect(scan.verdict.state == .unknown)
        #expect(scan.verdict.app == "xrdp" && scan.verdict.pid == 77)
    }

    @Test func noServerIsClear() throws {
        let procfs = try FakeProcfs()
        defer { procfs.remove() }
        try procfs.addProcess(
            10, comm: "xtightvncviewer", arguments: ["xtightvncviewer"], sockets: [4: 274895],
            tcp: try remoteDesktopFixture("x11vnc-viewer-tcp.txt"), tcp6: "")
        let scan = RemoteDesktopScan(table: ProcessTable(root: procfs.root.path), servers: .builtIn)
        #expect(scan == RemoteDesktopScan())
        #expect(scan.verdict == PollVerdict(.clear, reason: "no remote-desktop server running", confidence: 0.9))
    }

    @Test func theSourceReportsTheScanWithALease() throws {
        let procfs = try FakeProcfs()
        defer { procfs.remove() }
        try procfs.addProcess(
            4242, comm: "x11vnc", arguments: ["x11vnc"], sockets: [11: 276458],
            tcp: try remoteDesktopFixture("x11vnc-viewer-tcp.txt"), tcp6: "")
        let clock = ManualClock()
        let monitor = CaptureMonitor(wallClock: { clock.now })
        monitor.attach(RemoteDesktopSource(interval: 5, table: ProcessTable(root: procfs.root.path)))
        defer { monitor.stopAll() }
        // The first scan ran inside `attach`.
        let decision = monitor.decision(atMedia: 0)
        #expect(decision.state == .capturing && decision.source == "remote-desktop" && decision.pid == 4242)
        // No renewal within the lease (the next scan is 5 s away): it lapses to unknown.
        clock.advance(10.2)
        #expect(monitor.decision(atMedia: 0).state == .unknown)
    }
}
