/// A remote-viewing server GuardPlay knows: a program that shows this desktop to someone elsewhere.
public struct RemoteDesktopServer: Sendable, Hashable {
    /// The name reports give (`x11vnc`, `gnome-remote-desktop`).
    public var name: String
    /// The `comm` values its processes have (the executable's name cut to 15 characters).
    public var comms: Set<String>

    /// Creates a server entry.
    public init(name: String, comms: Set<String>) {
        self.name = name
        self.comms = comms
    }
}

/// A viewer connected to a remote-viewing server.
public struct RemoteViewing: Sendable, Hashable {
    /// The server's process ID.
    public var pid: Int32
    /// The server's name.
    public var app: String
    /// The viewer's end of the connection.
    public var peer: SocketAddress

    /// Creates a sighting.
    public init(pid: Int32, app: String, peer: SocketAddress) {
        self.pid = pid
        self.app = app
        self.peer = peer
    }
}

/// The remote-viewing servers, and which of a server's TCP sockets are a viewer.
///
/// A viewer is connected when the server's process holds an ESTABLISHED TCP socket. Two kinds of
/// established socket are not viewers: a connection on an X11 port (6000 to 6063) at either end, which is
/// an X client talking to its display (x11vnc to its X server, or an X client of Xvnc), and RustDesk's
/// standing connection to its rendezvous server (remote port 21115 or 21116), which it holds whether or
/// not anyone watches.
public struct RemoteDesktopServers: Sendable {
    /// The servers looked for.
    public let servers: [RemoteDesktopServer]
    private let byComm: [String: RemoteDesktopServer]

    /// x11vnc, TigerVNC's x0vncserver and Xvnc, wayvnc, gnome-remote-desktop, krfb, xrdp, Sunshine and
    /// RustDesk.
    public static let builtIn = RemoteDesktopServers([
        RemoteDesktopServer(name: "x11vnc", comms: ["x11vnc"]),
        RemoteDesktopServer(name: "x0vncserver", comms: ["x0vncserver"]),
        RemoteDesktopServer(name: "Xvnc", comms: ["Xvnc", "Xtigervnc"]),
        RemoteDesktopServer(name: "wayvnc", comms: ["wayvnc"]),
        RemoteDesktopServer(name: "gnome-remote-desktop", comms: ["gnome-remote-de"]),
        RemoteDesktopServer(name: "krfb", comms: ["krfb"]),
        RemoteDesktopServer(name: "xrdp", comms: ["xrdp"]),
        RemoteDesktopServer(name: "sunshine", comms: ["sunshine"]),
        RemoteDesktopServer(name: "rustdesk", comms: ["rustdesk"]),
    ])

    /// Creates a list of servers.
    public init(_ servers: [RemoteDesktopServer]) {
        self.servers = servers
        var byComm: [String: RemoteDesktopServer] = [:]
        for server in servers {
            for comm in server.comms { byComm[comm] = server }
        }
        self.byComm = byComm
    }

    /// The server a process with this `comm` is, or nil.
    public func server(comm: String) -> RemoteDesktopServer? { byComm[comm] }

    /// The viewers of `server` (process `pid`): its established sockets among `sockets` whose inode is in
    /// `inodes`, less those that are not viewers; one per peer, in the table's order.
    public static func viewers(
        of server: RemoteDesktopServer, pid: Int32, inodes: Set<UInt64>, sockets: [TCPSocket]
    ) -> [RemoteViewing] {
        var seen = Set<SocketAddress>()
        var result: [RemoteViewing] = []
        for socket in sockets where socket.state == TCPSocket.established && inodes.contains(socket.inode) {
            guard isViewer(socket, of: server), seen.insert(socket.remote).inserted else { continue }
            result.append(RemoteViewing(pid: pid, app: server.name, peer: socket.remote))
        }
        return result
    }

    /// False for the established sockets of a server that are not a viewer (see the type's comment).
    static func isViewer(_ socket: TCPSocket, of server: RemoteDesktopServer) -> Bool {
        let x11 = UInt16(6000)...UInt16(6063)
        if x11.contains(socket.local.port) || x11.contains(socket.remote.port) { return false }
        if server.name == "rustdesk", [21115, 21116].contains(socket.remote.port) { return false }
        return true
    }
}
