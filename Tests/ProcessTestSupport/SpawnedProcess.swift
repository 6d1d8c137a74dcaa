import Foundation

/// A child started with `posix_spawn` in a process group of its own and reaped with `waitpid`.
///
/// Foundation's `Process.waitUntilExit` waits until every inheritor of its bookkeeping descriptor is gone,
/// and daemons (PipeWire's, an X server's, a sound server's) outlive the scripts that start them, so tests
/// that start such programs manage them with this instead. `end()` kills the whole group, so whatever the
/// child started goes too.
public final class SpawnedProcess: @unchecked Sendable {
    // Invariant: `status` and `reaped` are read and written only under `lock`.
    private let lock = NSLock()
    private var status: Int32?
    private var reaped = false
    /// The child's process ID (also its process group ID).
    public let pid: pid_t
    /// The command line, for messages.
    public let arguments: [String]

    /// Starts `arguments` (an absolute path first) with `environment` added to this process's own, or
    /// replacing it when `inherit` is false. Standard output and error go to the files at `output` and
    /// `errors` (created or appended to), or to /dev/null; `descriptors` maps a child's descriptor to one
    /// of ours (say 3 → a pipe's write end, for `Xvfb -displayfd 3`).
    public init(
        _ arguments: [String], environment: [String: String] = [:], inherit: Bool = true, output: String? = nil,
        errors: String? = nil, descriptors: [Int32: Int32] = [:]
    ) throws {
        self.arguments = arguments
        var merged = inherit ? ProcessInfo.processInfo.environment : [:]
        for (key, value) in environment { merged[key] = value }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errors ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        for (child, ours) in descriptors { posix_spawn_file_actions_adddup2(&actions, ours, child) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own, so that killing the group takes the daemons it starts too; and the
        // default signal dispositions, since a test runner may start its children ignoring SIGTERM.
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw SpawnError("posix_spawn \(arguments[0]): \(String(cString: strerror(result)))")
        }
        self.pid = pid
    }

    /// The exit status once the child has ended (128 + the signal number when a signal ended it), or nil
    /// while it runs. The child is left unreaped until `end()`, so its process group cannot be reused by
    /// an unrelated process before `end()` kills what is left of it.
    public var exitStatus: Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0, info._sifields._sigchld.si_pid == pid
        else { return nil }
        let value = info._sifields._sigchld.si_status
        let code = info.si_code == CLD_EXITED ? value : 128 + value
        status = code
        return code
    }

    /// True while the child runs.
    public var isRunning: Bool { exitStatus == nil }

    /// Waits up to `timeout` seconds for the child to end; returns its exit status, or nil if it still runs.
    @discardableResult
    public func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = exitStatus { return status }
            usleep(10_000)
        }
        return exitStatus
    }

    /// Sends `number` to the child alone.
    public func signal(_ number: Int32) {
        if isRunning { kill(pid, number) }
    }

    /// Ends the child's whole process group (SIGTERM, then SIGKILL after `grace` seconds) and reaps the
    /// child; calling it again does nothing.
    public func end(grace: Double = 2) {
        lock.lock()
        let done = reaped
        reaped = true
        lock.unlock()
        guard !done else { return }
        if isRunning {
            kill(-pid, SIGTERM)
            wait(timeout: grace)
        }
        // The unreaped child still holds its process group ID, so this reaches only its own group.
        kill(-pid, SIGKILL)
        var raw: Int32 = 0
        waitpid(pid, &raw, 0)
    }

    deinit { end(grace: 0.5) }
}

/// A child that could not be started or did not get ready.
public struct SpawnError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    /// Creates an error.
    public init(_ description: String) {
        self.description = description
    }
}

/// Polls `condition` every 20 ms for up to `timeout` seconds; returns whether it came true.
public func eventually(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
