import Foundation
import HTTPTestSupport
import ProcessTestSupport

/// A folder served over HTTP on a loopback port of its own by Python's `http.server`: a second origin
/// beside the gateway's, for a page that calls the gateway cross-origin.
final class StaticSite {
    /// The folder served (`files/` inside a temporary directory that also holds the server's log).
    let root: String
    let port: UInt16
    private let directory: TemporaryDirectory
    private let process: SpawnedProcess

    init() throws {
        directory = try TemporaryDirectory()
        root = directory.path("files")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let log = directory.path("server.log")
        process = try SpawnedProcess(
            ["/usr/bin/python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root],
            output: log, errors: log)
        var port: UInt16?
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        _ = eventually(timeout: 30) { [process] in
            let text = fileText(log)
            if let range = text.range(of: " port "), let end = text[range.upperBound...].firstIndex(of: " ") {
                port = UInt16(text[range.upperBound..<end])
            }
            return port != nil || !process.isRunning
        }
        guard let port else {
            process.end(grace: 0)
            throw RawClientError("python3 -m http.server did not start: \(fileText(log))")
        }
        self.port = port
    }

    deinit { process.end(grace: 1) }

    /// The site's origin, as a browser names it in `Origin`.
    var origin: String { "http://127.0.0.1:\(port)" }

    /// Writes `text` as the file `name` of the site.
    func write(_ text: String, as name: String) throws {
        try text.write(toFile: root + "/" + name, atomically: true, encoding: .utf8)
    }
}
