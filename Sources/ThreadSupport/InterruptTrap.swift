import Dispatch
import Glibc
import Synchronization

/// Catches SIGINT and SIGTERM for a command that must clean up before it exits: the first signal calls
/// `onSignal` on a dispatch queue (never inside the signal handler itself); if the command has not
/// exited `grace` seconds later, `lastResort` runs and the process exits with status 130.
///
/// On Linux a dispatch signal source installs a handler of libdispatch's own for its signal, on the
/// manager thread after `resume()` returns, and that handler forwards the signal to the manager thread,
/// which blocks it for its signalfd. So `init` returns only once both sources are registered: a trap
/// released before then would have its default actions replaced by that handler afterwards, and a later
/// SIGTERM would wait blocked on the manager thread for ever instead of ending the process.
///
/// libdispatch installs that handler once a process, for the first source on a signal. A trap made after
/// another was released puts it back (`release` restored the default), or the signal would be ignored.
public final class InterruptTrap {
    private static let signals = [SIGINT, SIGTERM]
    private let sources: [any DispatchSourceSignal]
    /// libdispatch's handler for each signal, as the first trap found it once its source was registered.
    private static let dispatchActions = Mutex<[Int32: sigaction]>([:])

    public init(
        grace: Double = 5, onSignal: @escaping @Sendable () -> Void, lastResort: @escaping @Sendable () -> Void
    ) {
        let queue = DispatchQueue(label: "guard-play.signals")
        let registered = DispatchGroup()
        sources = Self.signals.map { number in
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
        Self.dispatchActions.withLock { actions in
            for number in Self.signals {
                if var action = actions[number] {
                    sigaction(number, &action, nil)
                } else {
                    var action = sigaction()
                    sigaction(number, nil, &action)
                    actions[number] = action
                }
            }
        }
    }

    /// Stops catching the signals and restores their default action.
    public func release() {
        for source in sources { source.cancel() }
        for number in Self.signals { signal(number, SIG_DFL) }
    }
}
