import Foundation
import Testing
import ThreadSupport

/// The action the process now has for `number`: nil is the default (SIG_DFL).
private func handler(of number: Int32) -> sighandler_t? {
    var action = sigaction()
    sigaction(number, nil, &action)
    return action.__sigaction_handler.sa_handler
}

// No signal is sent: a caught one would end this process after the trap's grace period.
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
}
