import Glibc
import Synchronization

/// Why a child could not be started: the `posix_spawn` or `pipe` error.
public struct ChildProcessError: Error, Sendable, CustomStringConvertible {
    /// The executable.
    public let executable: String
    /// The `errno` value.
    public let code: Int32

    public var description: String { "\(executable): \(String(cString: strerror(code)))" }
}

/// A child started with `posix_spawn`, its standard input and error on `/dev/null` and its standard output
/// on a pipe this process reads: what `Process` with a `Pipe` did, without Foundation.
public final class ChildProcess: Sendable {
    private enum Phase { case running, exited(Int32), signalled }

    /// The child's process ID.
    public let pid: Int32
    /// The read end of the child's standard output.
    public let output: Int32
    private let phase = Mutex(Phase.running)

    /// Starts `executable` with `arguments` (not counting the program name) and `environment`.
    public init(executable: String, arguments: [String], environment: [String: String]) throws(ChildProcessError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0, fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0
        else { throw ChildProcessError(executable: executable, code: errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, nil, argv, envp)
        close(ends[1])
        guard status == 0 else {
            close(ends[0])
            throw ChildProcessError(executable: executable, code: status)
        }
        pid = child
        output = ends[0]
    }

    deinit { close(output) }

    /// Up to `count` bytes of the child's output as they arrive; empty at its end (or on a read error).
    public func read(upTo count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        while true {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(output, $0.baseAddress!, count) }
            if got < 0 && errno == EINTR { continue }
            bytes.removeLast(count - max(got, 0))
            return bytes
        }
    }

    /// True until `waitForExit` has reaped the child.
    public var isRunning: Bool { phase.withLock { if case .running = $0 { true } else { false } } }

    /// Sends `SIGTERM`, unless the child has been reaped (its ID may be another process's by then).
    public func terminate() {
        phase.withLock { phase in
            if case .running = phase { kill(pid, SIGTERM) }
        }
    }

    /// Waits for the child to end and reaps it: its exit status, or nil when a signal ended it.
    @discardableResult
    public func waitForExit() -> Int32? {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signalled = status & 0x7F != 0
        let code = (status >> 8) & 0xFF
        phase.withLock { $0 = signalled ? .signalled : .exited(code) }
        return signalled ? nil : code
    }
}
