import FoundationEssentials
import HTTPServer
public import Store
import SystemSupport

/// Everything `guard-play serve` (and `guard-play tokens`) can be told, from a config file and the
/// command line; the command line wins. The file holds `key = value` lines whose keys are the long
/// option names, with `#` comments; list values are comma-separated.
public struct ServeConfiguration: Equatable, Sendable {
    public var host = "127.0.0.1"
    public var port: UInt16 = 8080
    public var dataDirectory = "guard-data"
    public var kekFile: String?
    /// `--watermark-key-file`: the key sessions' watermark variants are chosen under.
    public var watermarkKeyFile: String?
    public var publicURL: String?
    public var corsOrigins: [String] = []
    public var inputRoot = "."
    public var importRoots: [String] = []
    public var sessionTTL: Double = 4 * 3600
    public var captureLease: Double = 10
    public var jobWorkers = 1
    /// `--job-lease`: how long a job claim on a shared store holds without a renewal.
    public var jobLease: Double = 30
    public var threads = 4
    public var connectionLimit = 1024
    public var perIPConnectionLimit = 128
    public var idleTimeout: Double = 30
    public var headerTimeout: Double = 10
    public var bodyTimeout: Double = 30
    public var maxBodyBytes = 64 * 1024
    public var drain: Double = 5
    public var auditRetention: Double = 30 * 86400
    public var trustedProxies: [String] = []
    /// Event streams open at most; nil for three quarters of the connection limit.
    public var maxStreams: Int?
    /// `--store`: a PostgreSQL URL, or nil (or `sqlite`) for the SQLite database under `dataDirectory`.
    public var store: String?

    /// The options that take a value, shared by the config file and the command line.
    public static let keys = [
        "listen", "data", "kek-file", "public-url", "cors-origin", "input-root", "import-root", "session-ttl", "lease",
        "job-workers", "threads", "connection-limit", "per-ip-connection-limit", "idle-timeout", "header-timeout",
        "body-timeout", "max-body", "drain", "audit-retention", "trusted-proxy", "max-streams",
        "store", "job-lease", "watermark-key-file",
    ]
    /// Keys that may be given more than once on the command line (the file takes comma lists).
    public static let repeatable: Set<String> = ["cors-origin", "import-root", "trusted-proxy"]

    /// A configuration of the defaults.
    public init() {}

    /// Applies a config file's `key = value` lines; `path` names the file in errors, with the line.
    /// A key may be given once; `cors-origins` and `import-roots` are spellings of the list keys.
    public mutating func apply(file text: String, path: String) throws(ServeConfigurationError) {
        var seen = Set<String>()
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                .trimmingSpaces()
            guard !line.isEmpty else { continue }
            let source = "config \(path):\(index + 1)"
            guard let equals = line.firstIndex(of: "=") else {
                throw ServeConfigurationError(.badValue, "\(source): expected 'key = value'")
            }
            let key = line[..<equals].trimmingSpaces()
            let value = line[line.index(after: equals)...].trimmingSpaces()
            let normalised = key == "cors-origins" ? "cors-origin" : key == "import-roots" ? "import-root" : key
            guard Self.keys.contains(normalised) else {
                throw ServeConfigurationError(.badValue, "\(source): unknown key '\(key)'")
            }
            guard seen.insert(normalised).inserted else {
                throw ServeConfigurationError(.badValue, "\(source): '\(key)' given twice")
            }
            try apply(normalised, value, source: source)
        }
    }

    /// Sets option `key` (a long option name without `--`) to `value`; `source` names where the value
    /// came from (a file line, an option, the environment) in errors.
    public mutating func apply(_ key: String, _ value: String, source: String) throws(ServeConfigurationError) {
        func bad(_ expected: String) -> ServeConfigurationError {
            ServeConfigurationError(.badValue, "\(source): invalid value '\(value)' for \(key): expected \(expected)")
        }
        func count(_ range: ClosedRange<Int>) throws(ServeConfigurationError) -> Int {
            guard let number = Int(value), range.contains(number) else {
                throw bad("an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        func duration(_ range: ClosedRange<Double>) throws(ServeConfigurationError) -> Double {
            guard let seconds = Self.parseDuration(value), range.contains(seconds) else {
                throw bad("a duration such as 30s, 5m or 4h, from \(range.lowerBound) to \(range.upperBound) seconds")
            }
            return seconds
        }
        func list() -> [String] {
            value.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        }
        switch key {
        case "listen":
            guard let (host, port) = Self.parseAddress(value) else { throw bad("HOST:PORT, such as 127.0.0.1:8080") }
            self.host = host
            self.port = port
        case "data":
            guard !value.isEmpty else { throw bad("a directory") }
            dataDirectory = value
        case "kek-file":
            guard !value.isEmpty else { throw bad("a file") }
            kekFile = value
        case "watermark-key-file":
            guard !value.isEmpty else { throw bad("a file") }
            watermarkKeyFile = value
        case "public-url":
            guard value.hasPrefix("http://") || value.hasPrefix("https://"), !value.contains(where: \.isWhitespace)
            else { throw bad("an http:// or https:// URL") }
            publicURL = value.hasSuffix("/") ? String(value.dropLast()) : value
        case "cors-origin":
            let origins = list()
            for origin in origins where origin != "*" && !(origin.hasPrefix("http://") || origin.hasPrefix("https://"))
            {
                throw ServeConfigurationError(
                    .badValue, "\(source): invalid CORS origin '\(origin)': expected * or scheme://host[:port]")
            }
            corsOrigins = origins
        case "input-root":
            guard !value.isEmpty else { throw bad("a directory") }
            inputRoot = value
        case "import-root": importRoots = list()
        case "session-ttl": sessionTTL = try duration(60...86400)
        case "lease": captureLease = try duration(1...3600)
        case "job-workers": jobWorkers = try count(1...64)
        case "job-lease": jobLease = try duration(3...3600)
        case "threads": threads = try count(1...256)
        case "connection-limit": connectionLimit = try count(1...100_000)
        case "per-ip-connection-limit": perIPConnectionLimit = try count(0...100_000)
        case "idle-timeout": idleTimeout = try duration(1...3600)
        case "header-timeout": headerTimeout = try duration(1...300)
        case "body-timeout": bodyTimeout = try duration(1...3600)
        case "max-body": maxBodyBytes = try count(1024...64 * 1024 * 1024)
        case "drain": drain = try duration(0...300)
        case "audit-retention": auditRetention = try duration(3600...10 * 365 * 86400)
        case "trusted-proxy":
            let ranges = list()
            if case .failure(let error) = TrustedProxies.parse(ranges) {
                throw ServeConfigurationError(.badValue, "\(source): \(error)")
            }
            trustedProxies = ranges
        case "max-streams": maxStreams = try count(1...100_000)
        case "store":
            do { _ = try StoreLocation(option: value, dataDirectory: dataDirectory) } catch {
                throw ServeConfigurationError(.badValue, "\(source): invalid value for store: \(error.message)")
            }
            store = value
        default: throw ServeConfigurationError(.unknownKey, "\(source): unknown key '\(key)'")
        }
    }

    /// Where the store is: the `store` option, else the SQLite database under the data directory.
    public var storeLocation: StoreLocation {
        // `set` has checked the value already.
        (try? StoreLocation(option: store ?? "sqlite", dataDirectory: dataDirectory))
            ?? .sqlite(directory: dataDirectory)
    }

    /// `30`, `30s`, `5m`, `4h`, `30d` or `1.5s`, in seconds.
    public static func parseDuration(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var number = Substring(text)
        var scale = 1.0
        if let last = number.last, let unit = units[last] {
            scale = unit
            number = number.dropLast()
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(number), value.isFinite
        else { return nil }
        return value * scale
    }

    /// `host:port`, `[v6]:port`, or `:port` (which means 127.0.0.1).
    public static func parseAddress(_ text: String) -> (String, UInt16)? {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        if host.isEmpty { host = "127.0.0.1" }
        guard let port = UInt16(portText), portText.allSatisfy(\.isNumber) else { return nil }
        return (String(host), port)
    }
}

/// A config file line or an option value `ServeConfiguration` refuses, with where it came from.
public struct ServeConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public enum Kind: Sendable, Equatable {
        /// A value that does not parse or is out of range, a line that is not `key = value`, a key the
        /// file does not know or gives twice.
        case badValue
        /// `apply(_:_:source:)` was given a key that is not one of `keys`.
        case unknownKey
    }

    /// What was wrong.
    public let kind: Kind
    /// One line naming the source (file and line, or option) and the value.
    public let message: String

    /// An error of `kind` reading `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
