import Foundation
import HTTPTestSupport
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(30))) struct RawClientTests {
    /// A loopback port with nothing listening: bound once by the kernel's choice, then closed.
    static func deadPort() throws -> UInt16 {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard bind(probe, $0, length) == 0, getsockname(probe, $0, &length) == 0 else {
                    throw RawClientError("bind: \(String(cString: strerror(errno)))")
                }
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    /// A refused connection closes its socket once. It closed it in `init` and again in `deinit` (which
    /// Swift runs when a class's initializer throws after setting every property), so the second close
    /// hit whatever another thread had opened under that number meanwhile: files read in the full suite
    /// failed with EBADF. Here a second thread keeps opening a file and checks its descriptor survives.
    @Test func aRefusedConnectionClosesOnlyItsOwnSocket() throws {
        let port = try Self.deadPort()
        let stop = Atomic(false)
        let lost = Atomic(0)
        let watcher = Thread {
            while !stop.load(ordering: .relaxed) {
                let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { continue }
                var intact = true
                for _ in 0..<50 where fcntl(descriptor, F_GETFD) < 0 { intact = false }
                if intact { close(descriptor) } else { lost.add(1, ordering: .relaxed) }
            }
        }
        watcher.start()
        defer { stop.store(true, ordering: .relaxed) }
        for _ in 0..<20_000 {
            #expect(throws: RawClientError.self) { _ = try RawClient(port: port) }
        }
        stop.store(true, ordering: .relaxed)
        #expect(lost.load(ordering: .relaxed) == 0, "another thread's descriptor was closed under it")
    }
}
