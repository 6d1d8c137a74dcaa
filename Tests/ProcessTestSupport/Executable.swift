import Foundation

/// Writes `contents` to a new executable file at `path` (mode 0755), replacing what is there.
///
/// Foundation writes and copies files through descriptors without close-on-exec. A test that starts a
/// child from another thread while such a descriptor is open hands it to the child, which keeps the new
/// file open for writing for as long as it lives, and every exec of the file fails with "Text file busy"
/// (ETXTBSY). This descriptor is close-on-exec, and the file is renamed into place only once it is closed.
public func writeExecutable(_ contents: String, to path: String) throws {
    try writeExecutable(Array(contents.utf8), to: path)
}

/// Copies the program at `source` to a new executable file at `path`, as `writeExecutable` writes one.
public func copyExecutable(from source: String, to path: String) throws {
    guard let bytes = FileManager.default.contents(atPath: source) else {
        throw SpawnError("cannot read \(source)")
    }
    try writeExecutable(Array(bytes), to: path)
}

private func writeExecutable(_ bytes: [UInt8], to path: String) throws {
    let aside = path + ".writing-\(getpid())"
    let descriptor = open(aside, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
    guard descriptor >= 0 else { throw SpawnError("open \(aside): \(String(cString: strerror(errno)))") }
    var written = 0
    while written < bytes.count {
        let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            unlink(aside)
            throw SpawnError("write \(aside): \(reason)")
        }
        written += count
    }
    close(descriptor)
    guard rename(aside, path) == 0 else {
        let reason = String(cString: strerror(errno))
        unlink(aside)
        throw SpawnError("rename \(aside): \(reason)")
    }
}

/// Starts a `Process` made by `make`, making a new one and trying again for up to a second while the
/// kernel answers "Text file busy": a child another thread is starting at this moment holds, between its
/// fork and its exec, a copy of every descriptor this process has open, close-on-exec or not.
public func runRetryingBusyText(_ make: () -> Process) throws -> Process {
    let deadline = Date().addingTimeInterval(1)
    while true {
        let process = make()
        do {
            try process.run()
            return process
        } catch let error as NSError {
            let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError
            let busy = (underlying ?? error).domain == NSPOSIXErrorDomain && (underlying ?? error).code == Int(ETXTBSY)
            guard busy, Date() < deadline else { throw error }
            usleep(20_000)
        }
    }
}
