import Glibc

/// Starts `body` on a new detached POSIX thread named `name` (what `top -H` shows, cut to the kernel's 15
/// bytes), with a stack of `stackSize` bytes when given: Foundation's `Thread`, without Foundation.
public func startThread(name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
    final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
    // The new thread takes over this retain and releases it when its body returns.
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(
        &thread, &attributes,
        { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            nameThisThread(start.name)
            start.body()
            return nil
        }, start)
    // Like `Thread.start`, running out of threads is fatal: no caller could go on without its thread.
    precondition(status == 0, "pthread_create(\(name)): \(String(cString: strerror(status)))")
}

/// Names the calling thread by writing its `comm` (the kernel keeps 15 bytes): `pthread_setname_np` and
/// `prctl(PR_SET_NAME)` are not visible to Swift through Glibc.
private func nameThisThread(_ name: String) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    defer { close(descriptor) }
    var bytes = Array(name.utf8.prefix(15))
    writeAll(descriptor, &bytes)
}
