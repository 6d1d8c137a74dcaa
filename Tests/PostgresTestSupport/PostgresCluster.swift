import Foundation
import ProcessTestSupport

/// A throwaway PostgreSQL cluster for tests: `initdb` in a temporary directory, the server listening
/// only on a Unix socket in that directory (no TCP port to collide with), stopped and removed when
/// the test process ends (a detached reaper waits for it) or by `remove()`.
///
/// `shared` is started once per test process and gives each test a database of its own
/// (`createDatabase`); tests that stop and start the server make a cluster of their own.
/// `initdb` refuses root, so as root the cluster belongs to the `postgres` user (`runuser`).
public final class PostgresCluster: Sendable {
    /// The server's binaries.
    public static let binaries = "/usr/lib/postgresql/15/bin"
    /// The cluster every test in this process shares, started on first use.
    public static let shared = Result { try PostgresCluster() }

    /// The temporary directory: the data directory, the socket and the server's log are inside.
    public let directory: String
    /// The port, which here only names the socket file.
    public let port = 5432
    /// Seconds `init` took to make and start the cluster.
    public let setupSeconds: Double

    /// Makes and starts a new cluster.
    public init() throws {
        let started = Date()
        var template = Array("/tmp/guardplay-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw SpawnError("mkdtemp: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        if geteuid() == 0 {
            guard let user = getpwnam("postgres") else {
                throw SpawnError("no postgres user: install Debian's postgresql package (scripts/setup.sh)")
            }
            chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        try Self.run(
            in: directory,
            [
                Self.binaries + "/initdb", "-D", directory + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8",
                "--locale=C", "--no-sync", "--no-instructions",
            ])
        try Self.run(in: directory, Self.startCommand(directory: directory, port: port))
        setupSeconds = Date().timeIntervalSince(started)
        // Stops the server and removes the directory once this process is gone, however it ends.
        let reaper = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            \(geteuid() == 0 ? "/usr/sbin/runuser -u postgres -- " : "")\(Self.binaries)/pg_ctl -D \(directory)/data -m immediate -w stop
            rm -rf \(directory)
            """
        // `setsid -f` forks the reaper into a session of its own and exits; wait for that, since ending
        // the starter's process group before the fork would take the reaper with it.
        let starter = try SpawnedProcess(Self.closingDescriptors(["/usr/bin/setsid", "-f", "/bin/sh", "-c", reaper]))
        guard starter.wait(timeout: 10) == 0 else { throw SpawnError("the cluster's reaper did not start") }
    }

    /// Starts the server (`pg_ctl start`) and waits until it takes connections.
    public func start() throws { try run(Self.startCommand(directory: directory, port: port)) }

    private static func startCommand(directory: String, port: Int) -> [String] {
        [
            binaries + "/pg_ctl", "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-o",
            "-k \(directory) -p \(port) -c listen_addresses='' -c fsync=off -c max_connections=200", "start",
        ]
    }

    /// Stops the server (`pg_ctl stop -m fast`): clients see their connections close.
    public func stop() throws {
        try run([Self.binaries + "/pg_ctl", "-D", directory + "/data", "-m", "fast", "-w", "stop"])
    }

    /// Restarts the server (`pg_ctl restart -m fast`), waiting until it takes connections again:
    /// clients see their connections close.
    public func restart() throws {
        try run([
            Self.binaries + "/pg_ctl", "-D", directory + "/data", "-l", directory + "/server.log", "-m", "fast", "-w",
            "restart",
        ])
    }

    /// Stops the server and removes the directory.
    public func remove() {
        try? run([Self.binaries + "/pg_ctl", "-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A libpq URL for `database` on this cluster's socket.
    public func url(database: String) -> String {
        "postgresql:///\(database)?host=\(directory)&port=\(port)&user=postgres"
    }

    /// Creates a new, empty database and returns its URL.
    public func createDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try run([Self.binaries + "/createdb", "-h", directory, "-p", String(port), "-U", "postgres", name])
        return url(database: name)
    }

    /// The rows `sql` returns from the database at `url`, one line each with columns split by `|`
    /// (`psql -At`).
    public func query(_ sql: String, url: String) throws -> String {
        let log = directory + "/query-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let child = try startQuery(sql, url: url, output: log)
        let status = child.wait(timeout: 30)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard status == 0 else { throw SpawnError("psql \(sql): \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `psql -At` running `sql` (statements separated by `;`, one transaction when they say
    /// `BEGIN`) on the database at `url`, writing its rows and messages to `output`, and returns
    /// without waiting.
    public func startQuery(_ sql: String, url: String, output: String) throws -> SpawnedProcess {
        try SpawnedProcess(
            Self.closingDescriptors(["/usr/bin/psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql]),
            output: output, errors: output)
    }

    /// Runs `arguments` as the cluster's owner and waits for it; throws with its output when it fails.
    public func run(_ arguments: [String]) throws { try Self.run(in: directory, arguments) }

    private static func run(in directory: String, _ arguments: [String]) throws {
        let log = directory + "/command-\(UUID().uuidString).log"
        let child = try SpawnedProcess(asOwner(arguments), output: log, errors: log)
        let status = child.wait(timeout: 60)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: log)
        guard status == 0 else {
            throw SpawnError(
                "\(arguments.joined(separator: " ")) exited \(status.map(String.init) ?? "late"): \(output)")
        }
    }

    /// `arguments` run as `postgres` when this process is root (`runuser`), as they are otherwise,
    /// with every descriptor above 2 closed first: the server outlives the test process, and must not
    /// keep open what it inherited (the build lock `flock` holds for `swift test`, say).
    private static func asOwner(_ arguments: [String]) -> [String] {
        closingDescriptors(geteuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments : arguments)
    }

    /// `command` run with every descriptor above 2 closed.
    private static func closingDescriptors(_ command: [String]) -> [String] {
        [
            "/bin/bash", "-c",
            #"for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec "$@""#,
            "closefds",
        ] + command
    }
}

/// The two stores a test can run the gateway and the store on: SQLite under the data directory, or
/// PostgreSQL, a new database of the test's own on the shared cluster.
public enum StoreBackend: String, CaseIterable, Sendable {
    case sqlite
    case postgres

    /// `guard-play serve`'s store options for a new store of this kind: none for SQLite (the default,
    /// under `--data`), `--store URL` of a new database for PostgreSQL.
    public func serveArguments() throws -> [String] {
        switch self {
        case .sqlite: []
        case .postgres: ["--store", try PostgresCluster.shared.get().createDatabase()]
        }
    }
}
