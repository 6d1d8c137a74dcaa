import Foundation
import Synchronization
import Testing
import ThreadSupport

/// The action the process now has for `number`: nil is the default (SIG_DFL).
private func handler(of number: Int32) -> sighandler_t? {
    var action = sigaction()
    sigaction(number, nil, &action)
    return action.__sigaction_handler.sa_handler
}

@Suite(.serialized) struct InterruptTrapTests {
    /// A trap released at once, as a command that fails at its first step releases it, leaves SIGINT and
    /// SIGTERM at their default actions. libdispatch installs its own handler for a signal source's signal
    /// after `resume()` returns, once a process; had the release come first, that handler would stay, and
    /// it forwards the signal to a thread that blocks it, so a SIGTERM would never end the process.
    @Test func aTrapReleasedAtOnceLeavesTheDefaultActions() {
        let trap = InterruptTrap(onSignal: {}, lastResort: {})
        #expect(handler(of: SIGTERM) != nil, "SIGTERM is not caught while the trap holds it")
        #expect(handler(of: SIGINT) != nil, "SIGINT is not caught while the trap holds it")
        trap.release()
        // Anything libdispatch's manager thread still had to do would be done by now.
        usleep(200_000)
        #expect(handler(of: SIGTERM) == nil, "SIGTERM's action after release is not the default")
        #expect(handler(of: SIGINT) == nil, "SIGINT's action after release is not the default")
    }

    /// A second trap, made after the first was released, catches the signals as the first did: SIGTERM
    /// sent to this process reaches each trap's `onSignal` and does not end the process. The grace
    /// period is set far beyond any test run, so the last resort (exit 130) never comes.
    @Test func aTrapMadeAfterAnotherWasReleasedStillCatchesTheSignals() {
        for trapNumber in 1...2 {
            let caught = Mutex(0)
            let trap = InterruptTrap(grace: 1e9, onSignal: { caught.withLock { $0 += 1 } }, lastResort: {})
            kill(getpid(), SIGTERM)
            let deadline = Date().addingTimeInterval(10)
            while caught.withLock({ $0 }) == 0 && Date() < deadline { usleep(1000) }
            trap.release()
            #expect(caught.withLock { $0 } == 1, "trap \(trapNumber) did not catch SIGTERM")
        }
        #expect(handler(of: SIGTERM) == nil, "SIGTERM's action after release is not the default")
    }
}
