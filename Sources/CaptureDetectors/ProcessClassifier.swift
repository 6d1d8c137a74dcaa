/// A running process as the scanner sees it.
public struct ProcessSnapshot: Sendable, Hashable {
    /// The process ID.
    public var pid: Int32
    /// `/proc/PID/comm`: the executable's name, at most 15 characters.
    public var comm: String
    /// `/proc/PID/cmdline` split at its NUL bytes.
    public var arguments: [String]

    /// Creates a snapshot.
    public init(pid: Int32, comm: String, arguments: [String]) {
        self.pid = pid
        self.comm = comm
        self.arguments = arguments
    }
}

/// A process found capturing.
public struct ProcessDetection: Sendable, Hashable {
    /// The process ID.
    public var pid: Int32
    /// The rule's name for the tool, such as `obs` or `ffmpeg`.
    public var app: String
    /// What it captures.
    public var kind: CaptureKind
    /// How sure the match is.
    public var confidence: Double
    /// Why it matched, in a few words.
    public var reason: String
}

/// Decides, from a process's name and command line, whether it is a capture tool at work.
public struct ProcessClassifier: Sendable {
    /// The rules it applies.
    public let rules: RecorderRules

    /// Interpreters whose first non-option argument is the program actually run (`python3 /usr/bin/kazam`).
    static let interpreters: Set<String> = [
        "sh", "bash", "dash", "zsh", "env", "python", "python2", "python3", "perl", "ruby", "node", "gjs",
    ]

    /// Creates a classifier for `rules`.
    public init(rules: RecorderRules = .builtIn) {
        self.rules = rules
    }

    /// The first rule the process matches, or nil.
    public func classify(_ process: ProcessSnapshot) -> ProcessDetection? {
        let program = Self.program(of: process)
        for rule in rules.rules where Self.names(process, program, rule.name) {
            if let why = Self.matches(rule.condition, program.arguments) {
                return ProcessDetection(
                    pid: process.pid, app: rule.name, kind: rule.kind, confidence: rule.confidence,
                    reason: why.isEmpty ? "\(rule.name) is running" : "\(rule.name) \(why)")
            }
        }
        return nil
    }

    /// The program's name and its own arguments, seeing through an interpreter.
    static func program(of process: ProcessSnapshot) -> (name: String, arguments: [String]) {
        var arguments = process.arguments
        guard let first = arguments.first else { return (process.comm, []) }
        var name = basename(first)
        if interpreters.contains(name) || name.hasPrefix("python3.") {
            arguments.removeFirst()
            while let next = arguments.first, next.hasPrefix("-") || next.contains("=") && name == "env" {
                arguments.removeFirst()
            }
            if let script = arguments.first { name = basename(script) }
        }
        return (name, Array(arguments.dropFirst()))
    }

    private static func names(
        _ process: ProcessSnapshot, _ program: (name: String, arguments: [String]), _ rule: String
    )
        -> Bool
    {
        program.name == rule || process.comm == String(rule.prefix(15))
    }

    /// A short reason when `condition` holds for `arguments` (empty for `.always`), or nil.
    static func matches(_ condition: RecorderRule.Condition, _ arguments: [String]) -> String? {
        switch condition {
        case .always:
            return ""
        case .inputFormat(let formats):
            var pending: String?
            var index = 0
            while index < arguments.count {
                let argument = arguments[index]
                if argument == "-f", index + 1 < arguments.count {
                    pending = arguments[index + 1]
                    index += 2
                    continue
                }
                if argument == "-i" {
                    if let format = pending, formats.contains(format) { return "grabs input '\(format)'" }
                    pending = nil
                }
                index += 1
            }
            return nil
        case .element(let elements):
            for argument in arguments {
                for token in argument.split(whereSeparator: { $0 == " " || $0 == "!" }) {
                    let element = String(token.prefix { $0 != "=" })
                    if elements.contains(element) { return "uses element '\(element)'" }
                }
            }
            return nil
        case .argument(let words):
            for argument in arguments {
                let value = argument.split(separator: "=", maxSplits: 1).last.map(String.init) ?? argument
                if words.contains(argument) || words.contains(value) { return "has argument '\(argument)'" }
            }
            return nil
        }
    }

    static func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
