import Dispatch
import Glibc

/// Catches SIGINT and SIGTERM for a command that must clean up before it exits: the first signal calls
/// `onSignal` on a dispatch queue (never inside the signal handler itself); if the command has not
/// exited `grace` seconds later, `lastResort` runs and the process exits with status 130.
///
/// On Linux a dispatch signal source installs a handler of libdispatch's own for its signal, on the
/// manager thread after `resume()` returns, and that handler forwards the signal to the manager thread,
/// which blocks it for its signalfd. So `init` returns only once both sources are registered: a trap
/// released before then would have its default actions replaced by that handler afterwards, and a later
/// SIGTERM would wait blocked on the manager thread for ever instead of ending the process.
public final class InterruptTrap {
    private let sources: [any DispatchSourceSignal]

    public init(
        grace: Double = 5, onSignal: @escaping @Sendable () -> Void, lastResort: @escaping @Sendable () -> Void
    ) {
        let queue = DispatchQueue(label: "guard-play.signals")
        let registered = DispatchGroup()
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                onSignal()
                queue.asyncAfter(deadline: .now() + grace) {
                    lastResort()
                    _exit(130)
                }
            }
            registered.enter()
            source.setRegistrationHandler { registered.leave() }
            source.resume()
            return source
        }
        // Bounded: a source whose registration failed never calls its handler.
        _ = registered.wait(timeout: .now() + 2)
    }

    /// Stops catching the signals and restores their default action.
    public func release() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
