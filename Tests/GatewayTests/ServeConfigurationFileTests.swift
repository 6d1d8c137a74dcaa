import ControlAPI
import Testing

/// The `--config` file's lines, as an editor on Windows saves them too.
@Suite struct ServeConfigurationFileTests {
    static let lines = [
        "# gateway", "listen = 127.0.0.1:9090", "threads = 3", "",
        "cors-origins = https://a.example, https://b.example",
    ]

    @Test func readsEveryLineOfACRLFFileAsOfALFFile() throws {
        var unix = ServeConfiguration()
        try unix.apply(file: Self.lines.joined(separator: "\n") + "\n", path: "lf.conf")
        var windows = ServeConfiguration()
        try windows.apply(file: Self.lines.joined(separator: "\r\n") + "\r\n", path: "crlf.conf")
        #expect(windows == unix)
        #expect(windows.port == 9090 && windows.threads == 3)
        #expect(windows.corsOrigins == ["https://a.example", "https://b.example"])
    }

    @Test func namesTheLineOfABadValueInACRLFFile() {
        var configuration = ServeConfiguration()
        #expect {
            try configuration.apply(file: "threads = 2\r\n\r\nthreads = 3\r\n", path: "crlf.conf")
        } throws: { error in
            "\(error)".contains("config crlf.conf:3: 'threads' given twice")
        }
    }
}
