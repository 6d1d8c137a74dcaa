import Dispatch
import FoundationEssentials
import Glibc

/// Catches SIGINT and SIGTERM for a command that must clean up before it exits: the first signal calls
/// `onSignal` on a dispatch queue (never inside the signal handler itself); if the command has not
/// exited `grace` seconds later, `lastResort` runs and the process exits with status 130.
final class InterruptTrap {
    private let sources: [any DispatchSourceSignal]

    init(grace: Double = 5, onSignal: @escaping @Sendable () -> Void, lastResort: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "guard-play.signals")
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
            source.resume()
            return source
        }
    }

    /// Stops catching the signals and restores their default action.
    func release() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
