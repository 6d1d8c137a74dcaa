import FoundationEssentials
import Glibc
import Synchronization

/// The tasks the newest-PID poll looks at again while they are in their exec window, each with its
/// `comm` file kept open: a look again costs one `pread(2)` of the name while it is unchanged (an exec
/// renames the task), and only a new name makes the task be read whole and classified again. A task's
/// file is closed when it leaves the window, and every one in `deinit`.
final class WatchedTasks: Sendable {
    private struct Watched {
        /// The task's `comm`, open.
        var descriptor: Int32
        /// The name it had when it was last classified; nil to read it whole at the next look.
        var comm: [UInt8]?
    }

    private let scanner: ProcessScanner
    private let keep: @Sendable (Int32) -> Bool
    private let tasks = Mutex<[Int32: Watched]>([:])

    /// Looks at tasks through `scanner`, reporting only processes that pass `keep`.
    init(scanner: ProcessScanner, keep: @escaping @Sendable (Int32) -> Bool) {
        self.scanner = scanner
        self.keep = keep
    }

    deinit {
        tasks.withLock { tasks in
            for watched in tasks.values { close(watched.descriptor) }
        }
    }

    /// How many tasks are watched (each with a descriptor open).
    var count: Int { tasks.withLock { $0.count } }

    /// The recorders among `pids` (task IDs: a thread counts as its process), which are the tasks now in
    /// their window; the ones watched before but no longer among them are let go.
    func classify(_ pids: [Int32]) -> [ProcessDetection] {
        tasks.withLock { tasks in
            if !tasks.isEmpty {
                let current = Set(pids)
                for (pid, watched) in tasks where !current.contains(pid) {
                    close(watched.descriptor)
                    tasks[pid] = nil
                }
            }
            var found: [ProcessDetection] = []
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ProcessScanner.commCapacity) { buffer in
                for pid in pids {
                    guard var watched = tasks[pid] ?? open(pid) else { continue }
                    let count = pread(watched.descriptor, buffer.baseAddress, buffer.count, 0)
                    guard count > 0 else {
                        // Gone (procfs says ESRCH once the task has exited).
                        close(watched.descriptor)
                        tasks[pid] = nil
                        continue
                    }
                    let comm = UnsafeBufferPointer(rebasing: buffer[0..<count])
                    if let kept = watched.comm, kept.elementsEqual(comm) { continue }
                    // Mid-exec the new name can come before the new command line: a task whose command
                    // line cannot be read yet is read whole again at the next look.
                    guard let process = scanner.process(pid) else {
                        watched.comm = nil
                        tasks[pid] = watched
                        continue
                    }
                    watched.comm = Array(comm)
                    tasks[pid] = watched
                    guard var detection = scanner.classifier.classify(process),
                        let owner = scanner.table.threadGroup(of: pid), keep(owner)
                    else { continue }
                    detection.pid = owner
                    if !found.contains(detection) { found.append(detection) }
                }
            }
            return found
        }
    }

    /// A task not watched yet, its `comm` opened; nil when it is gone.
    private func open(_ pid: Int32) -> Watched? {
        let descriptor = scanner.openFile(pid, "comm")
        return descriptor >= 0 ? Watched(descriptor: descriptor, comm: nil) : nil
    }
}
