/// A command line split into options and positional arguments, checked against the options a command
/// accepts. Accepts `--name value`, `--name=value`, flags, and options whose value is optional
/// (`--simulate-recording` or `--simulate-recording=2-5`, never `--simulate-recording 2-5`).
struct Arguments {
    /// How an option takes its value.
    enum Arity: Sendable {
        /// A flag: `--fast`.
        case flag
        /// A required value: `--out DIR` or `--out=DIR`.
        case value
        /// An optional value, only in the `=` form.
        case optionalValue
    }

    /// One accepted option.
    struct Option: Sendable {
        let name: String
        let arity: Arity
        let repeatable: Bool

        init(_ name: String, _ arity: Arity = .value, repeatable: Bool = false) {
            self.name = name
            self.arity = arity
            self.repeatable = repeatable
        }
    }

    private(set) var positionals: [String] = []
    private var values: [String: [String]] = [:]

    /// Parses `arguments` against `options`; throws a usage error naming the first problem.
    init(_ arguments: [String], options: [Option]) throws(CLIError) {
        let known = Dictionary(options.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            let body = argument.drop { $0 == "-" }
            let name = String(body.prefix { $0 != "=" })
            let inline: String? = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            guard let option = known[name] else {
                let hint = Suggestion.closest(to: name, among: options.map(\.name)).map { "did you mean '--\($0)'?" }
                throw CLIError(.usage, "unknown option '\(argument)' (\(hint ?? "see guard-play help"))")
            }
            if values[name] != nil && !option.repeatable {
                throw CLIError(.usage, "option '--\(name)' given twice")
            }
            switch option.arity {
            case .flag:
                if inline != nil { throw CLIError(.usage, "option '--\(name)' takes no value") }
                values[name, default: []].append("")
            case .optionalValue:
                values[name, default: []].append(inline ?? "")
            case .value:
                if let inline {
                    values[name, default: []].append(inline)
                } else if index < arguments.count {
                    values[name, default: []].append(arguments[index])
                    index += 1
                } else {
                    throw CLIError(.usage, "option '--\(name)' needs a value")
                }
            }
        }
    }

    /// True when the option was given.
    func has(_ name: String) -> Bool { values[name] != nil }

    /// The option's last value, or nil when absent (an empty string for a flag or a bare optional value).
    func value(_ name: String) -> String? { values[name]?.last }

    /// Every value of a repeatable option, in order.
    func all(_ name: String) -> [String] { values[name] ?? [] }

    /// The option's value parsed by `parse`, or nil when absent; a value that does not parse is a
    /// `badValue` error quoting it.
    func parsed<T>(_ name: String, as what: String, _ parse: (String) -> T?) throws(CLIError) -> T? {
        guard let text = value(name) else { return nil }
        guard let result = parse(text) else {
            throw CLIError(.badValue, "invalid value '\(text)' for --\(name): expected \(what)")
        }
        return result
    }
}
