import Foundation

/// A private X server (Xvfb) on a display number it picks itself (`-displayfd`), so tests running side by
/// side never share a display; black background, no TCP. Ended with its owner.
public final class VirtualDisplay {
    public let process: SpawnedProcess
    /// The display name, such as `:12`.
    public let name: String
    public let width: Int
    public let height: Int

    /// Starts Xvfb, or the X server `server` (its command line, to which `-displayfd 3` is added).
    public init(width: Int = 800, height: Int = 480, server: [String]? = nil) throws {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw SpawnError("pipe: \(String(cString: strerror(errno)))") }
        defer { close(pipe[0]) }
        do {
            process = try SpawnedProcess(
                server.map { $0 + ["-displayfd", "3"] } ?? [
                    "/usr/bin/Xvfb", "-displayfd", "3", "-screen", "0", "\(width)x\(height)x24", "-nolisten", "tcp",
                    "-br", "-noreset",
                ], descriptors: [3: pipe[1]])
        } catch {
            close(pipe[1])
            throw error
        }
        close(pipe[1])
        // Xvfb writes the display number and a newline once it accepts connections.
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while !text.hasSuffix("\n"), Date() < deadline {
            var poller = pollfd(fd: pipe[0], events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(pipe[0], &byte, 1) == 1 else { break }
            text.append(Character(UnicodeScalar(byte)))
        }
        guard let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.end()
            throw SpawnError("\(server?.first ?? "Xvfb") did not report a display number within 20 s")
        }
        name = ":\(number)"
        self.width = width
        self.height = height
    }

    deinit { process.end() }
}
