import ControlAPI
import FoundationEssentials

/// The command line's side of `ServeConfiguration` (ControlAPI, where the file parser is): the options
/// `Arguments` takes, and the configuration from `--config FILE`, `GUARDPLAY_STORE` and the options.
extension ServeConfiguration {
    /// The command-line options, for `Arguments`.
    static var options: [Arguments.Option] {
        keys.map { Arguments.Option($0, repeatable: repeatable.contains($0)) } + [Arguments.Option("config")]
    }

    /// The configuration from `--config FILE` (when given) overlaid with the other options.
    static func load(_ arguments: Arguments) throws(CLIError) -> ServeConfiguration {
        var configuration = ServeConfiguration()
        if let path = arguments.value("config") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError(.inputMissing, "cannot read config file \(path)")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw CLIError(.badValue, "config \(path): not UTF-8 text")
            }
            do { try configuration.apply(file: text, path: path) } catch { throw CLIError(error) }
        }
        // The environment overrides the file; the command line overrides both.
        if let value = ProcessInfo.processInfo.environment["GUARDPLAY_STORE"], !value.isEmpty {
            try configuration.set("store", value, source: "GUARDPLAY_STORE")
        }
        for key in keys {
            let values = arguments.all(key)
            guard !values.isEmpty else { continue }
            if repeatable.contains(key) {
                try configuration.set(key, values.joined(separator: ","), source: "--\(key)")
            } else {
                try configuration.set(key, values[values.count - 1], source: "--\(key)")
            }
        }
        return configuration
    }

    /// Sets option `key` to `value`, as the command line gives it; `source` names it in errors.
    mutating func set(_ key: String, _ value: String, source: String) throws(CLIError) {
        do { try apply(key, value, source: source) } catch { throw CLIError(error) }
    }
}

extension CLIError {
    /// A refused config line or option value: a bad value (exit 3), or a key no option has (exit 2).
    init(_ error: ServeConfigurationError) {
        self.init(error.kind == .unknownKey ? .usage : .badValue, error.message)
    }
}
