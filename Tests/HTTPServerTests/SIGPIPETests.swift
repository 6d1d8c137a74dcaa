import Foundation
import TestProcessSetup
import Testing

/// The test process survives a write to a closed socket (one such write once ended a whole CI run with
/// no word of which test made it), and the children tests start still take SIGPIPE's default action.
@Suite struct SIGPIPETests {
    @Test func aWriteToAClosedSocketFailsWithEPIPEAndIsCounted() throws {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        close(ends[1])
        defer { close(ends[0]) }
        let before = guardplay_test_sigpipe_count()
        let byte: UInt8 = 1
        let result = withUnsafePointer(to: byte) { write(ends[0], $0, 1) }
        let error = errno
        #expect(result == -1 && error == EPIPE, "write returned \(result), errno \(error)")
        #expect(guardplay_test_sigpipe_count() > before)
    }

    @Test func aChildStillDiesOfSIGPIPE() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", "kill -s PIPE $$; exit 0"]
        try child.run()
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal && child.terminationStatus == SIGPIPE)
    }
}
