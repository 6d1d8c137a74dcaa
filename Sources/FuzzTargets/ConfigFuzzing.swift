import ControlAPI

/// The serve config file: `ServeConfiguration.apply(file:path:)`, then the settings it gave written
/// back as a file and read again.
enum ConfigFuzzing {
    static func parse(_ data: UnsafeRawBufferPointer) {
        // `serve --config` refuses a file that is not UTF-8 before parsing it.
        guard let text = String(validating: data, as: UTF8.self) else { return }
        var configuration = ServeConfiguration()
        do {
            try configuration.apply(file: text, path: "fuzz.conf")
        } catch {
            precondition(error.kind == .badValue, "the file parser refused with \(error.kind): \(error)")
            precondition(error.message.hasPrefix("config fuzz.conf:"), "a refusal that names no line: \(error)")
            return
        }
        check(configuration)
        // The settings, written as a file, read back to the same settings. `public-url` loses one
        // trailing slash per read, so a URL that still ends in one would not come back the same.
        // A value holding a carriage return would be cut there when written back (the parser breaks
        // lines at every newline character, a lone "\r" among them): not written back.
        guard let file = render(configuration), configuration.publicURL?.hasSuffix("/") != true,
            !file.unicodeScalars.contains("\r")
        else { return }
        var again = ServeConfiguration()
        do {
            try again.apply(file: file, path: "rendered.conf")
        } catch {
            preconditionFailure("the settings written back were refused: \(error)\n\(file)")
        }
        precondition(again == configuration, "the settings written back read differently:\n\(file)")
    }

    /// Every value lies in the range the option documents.
    static func check(_ configuration: ServeConfiguration) {
        let c = configuration
        precondition((1...256).contains(c.threads) && (1...64).contains(c.jobWorkers))
        precondition((1...100_000).contains(c.connectionLimit) && (0...100_000).contains(c.perIPConnectionLimit))
        precondition((1024...64 * 1024 * 1024).contains(c.maxBodyBytes))
        precondition(c.maxStreams.map { (1...100_000).contains($0) } ?? true)
        let durations: [(Double, ClosedRange<Double>)] = [
            (c.sessionTTL, 60...86400), (c.captureLease, 1...3600), (c.jobLease, 3...3600), (c.idleTimeout, 1...3600),
            (c.headerTimeout, 1...300), (c.bodyTimeout, 1...3600), (c.drain, 0...300),
            (c.auditRetention, 3600...10 * 365 * 86400),
        ]
        for (value, range) in durations { precondition(range.contains(value), "duration \(value) outside \(range)") }
        precondition(!c.dataDirectory.isEmpty && !c.inputRoot.isEmpty && !c.host.isEmpty)
        precondition(c.corsOrigins.allSatisfy { !$0.isEmpty } && c.importRoots.allSatisfy { !$0.isEmpty })
    }

    /// The configuration as `key = value` lines, or nil when a value has no spelling the file reads
    /// back exactly (a duration Swift prints with an exponent, a host with a `]`). The host is always
    /// written in brackets, which keep its spaces and colons.
    static func render(_ c: ServeConfiguration) -> String? {
        func seconds(_ value: Double) -> String? {
            let text = "\(value)"
            return text.allSatisfy { $0.isNumber || $0 == "." } ? text : nil
        }
        guard !c.host.contains("]") else { return nil }
        var lines = ["listen = [\(c.host)]:\(c.port)", "data = \(c.dataDirectory)"]
        if let file = c.kekFile { lines.append("kek-file = \(file)") }
        if let file = c.watermarkKeyFile { lines.append("watermark-key-file = \(file)") }
        if let url = c.publicURL { lines.append("public-url = \(url)") }
        lines.append("cors-origin = \(c.corsOrigins.joined(separator: ", "))")
        lines.append("input-root = \(c.inputRoot)")
        lines.append("import-root = \(c.importRoots.joined(separator: ", "))")
        let durations = [
            ("session-ttl", c.sessionTTL), ("lease", c.captureLease), ("job-lease", c.jobLease),
            ("idle-timeout", c.idleTimeout), ("header-timeout", c.headerTimeout), ("body-timeout", c.bodyTimeout),
            ("drain", c.drain), ("audit-retention", c.auditRetention),
        ]
        for (key, value) in durations {
            guard let text = seconds(value) else { return nil }
            lines.append("\(key) = \(text)")
        }
        lines += [
            "job-workers = \(c.jobWorkers)", "threads = \(c.threads)", "connection-limit = \(c.connectionLimit)",
            "per-ip-connection-limit = \(c.perIPConnectionLimit)", "max-body = \(c.maxBodyBytes)",
            "trusted-proxy = \(c.trustedProxies.joined(separator: ", "))",
        ]
        if let streams = c.maxStreams { lines.append("max-streams = \(streams)") }
        if let store = c.store { lines.append("store = \(store)") }
        return lines.joined(separator: "\n") + "\n"
    }
}
