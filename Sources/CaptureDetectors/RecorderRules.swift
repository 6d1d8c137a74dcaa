/// What a detected capture takes.
public enum CaptureKind: String, Sendable, Hashable, CaseIterable {
    /// A screen or window recording.
    case screen
    /// A still screenshot.
    case screenshot
    /// A recording of the sound GuardPlay plays.
    case audio
}

/// One known capture tool: the process name, what it captures and, for general-purpose tools such as
/// ffmpeg and gst-launch, the arguments that make a run a capture rather than, say, a transcode.
public struct RecorderRule: Sendable, Hashable {
    /// How a general-purpose tool's command line is read.
    public enum Condition: Sendable, Hashable {
        /// Always a capture while running.
        case always
        /// ffmpeg-style: one of these formats is given with `-f` before an `-i` (an input format).
        case inputFormat([String])
        /// gst-launch-style: one of these elements appears in the pipeline.
        case element([String])
        /// Any argument equals, or contains after `=`, one of these words.
        case argument([String])
    }

    /// The executable's name as it appears in `/proc/PID/comm` or as the last component of `argv[0]`.
    public var name: String
    /// What the tool captures.
    public var kind: CaptureKind
    /// When a running process counts.
    public var condition: Condition
    /// How sure a match is, from 0 to 1.
    public var confidence: Double

    /// Creates a rule.
    public init(_ name: String, _ kind: CaptureKind, _ condition: Condition = .always, confidence: Double = 0.9) {
        self.name = name
        self.kind = kind
        self.condition = condition
        self.confidence = confidence
    }
}

/// The recorder list: built-in rules plus any a user adds in a config file.
public struct RecorderRules: Sendable, Hashable {
    /// The rules, in the order they are tried.
    public private(set) var rules: [RecorderRule]

    /// Creates a rule list.
    public init(_ rules: [RecorderRule]) {
        self.rules = rules
    }

    /// The recorders GuardPlay knows out of the box.
    public static let builtIn = RecorderRules(
        [
            "obs", "simplescreenrecorder", "kazam", "vokoscreen", "vokoscreenNG", "peek", "recordmydesktop",
            "gpu-screen-recorder", "kooha", "wf-recorder", "wl-screenrec",
        ].map { RecorderRule($0, .screen) }
            + ["grim", "flameshot", "spectacle", "gnome-screenshot", "scrot", "maim"].map {
                RecorderRule($0, .screenshot, confidence: 0.8)
            }
            + ["parec", "parecord", "pw-record"].map { RecorderRule($0, .audio) }
            // The same tools under their general names, when told to record.
            + [
                RecorderRule("pacat", .audio, .argument(["-r", "--record"])),
                RecorderRule("pw-cat", .audio, .argument(["-r", "--record"])),
            ]
            + [
                RecorderRule(
                    "ffmpeg", .screen, .inputFormat(["x11grab", "kmsgrab", "pipewiregrab"]), confidence: 0.95),
                RecorderRule("ffmpeg", .audio, .inputFormat(["pulse", "alsa"]), confidence: 0.8),
                RecorderRule("gst-launch-1.0", .screen, .element(["ximagesrc", "pipewiresrc"]), confidence: 0.9),
                RecorderRule("gst-launch-1.0", .audio, .element(["pulsesrc"]), confidence: 0.8),
            ])

    /// Reads a rule file and applies it on top of `self`.
    ///
    /// One rule per line; `#` starts a comment. `screen|screenshot|audio NAME [when-input F…]
    /// [when-element E…] [when-arg A…] [confidence C]` adds a rule, and `ignore NAME` removes every rule
    /// for NAME (say, a screenshot tool that idles in the tray).
    public func applying(config text: String) throws(RuleFileError) -> RecorderRules {
        var result = rules
        for (offset, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated()
        {
            let line = rawLine.prefix { $0 != "#" }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            guard let verb = words.first else { continue }
            let number = offset + 1
            guard words.count >= 2 else { throw RuleFileError(line: number, message: "'\(verb)' needs a process name") }
            let name = words[1]
            if verb == "ignore" {
                guard words.count == 2 else { throw RuleFileError(line: number, message: "'ignore' takes only a name") }
                result.removeAll { $0.name == name }
                continue
            }
            guard let kind = CaptureKind(rawValue: verb) else {
                throw RuleFileError(
                    line: number, message: "unknown kind '\(verb)' (expected screen, screenshot, audio or ignore)")
            }
            result.append(try Self.parseRule(name: name, kind: kind, words: Array(words.dropFirst(2)), line: number))
        }
        return RecorderRules(result)
    }

    private static func parseRule(name: String, kind: CaptureKind, words: [String], line: Int) throws(RuleFileError)
        -> RecorderRule
    {
        var condition = RecorderRule.Condition.always
        var confidence = 0.9
        var index = 0
        while index < words.count {
            let keyword = words[index]
            var values: [String] = []
            index += 1
            while index < words.count, !["when-input", "when-element", "when-arg", "confidence"].contains(words[index])
            {
                values.append(words[index])
                index += 1
            }
            guard !values.isEmpty else { throw RuleFileError(line: line, message: "'\(keyword)' needs a value") }
            switch keyword {
            case "when-input": condition = .inputFormat(values)
            case "when-element": condition = .element(values)
            case "when-arg": condition = .argument(values)
            case "confidence":
                guard values.count == 1, let value = Double(values[0]), (0...1).contains(value) else {
                    throw RuleFileError(line: line, message: "confidence must be one number from 0 to 1")
                }
                confidence = value
            default:
                throw RuleFileError(line: line, message: "unknown word '\(keyword)'")
            }
        }
        return RecorderRule(name, kind, condition, confidence: confidence)
    }
}

/// A rule file that does not parse: the line and what is wrong with it.
public struct RuleFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line number.
    public let line: Int
    /// What is wrong.
    public let message: String

    /// Creates an error for `line`.
    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { "line \(line): \(message)" }
}
