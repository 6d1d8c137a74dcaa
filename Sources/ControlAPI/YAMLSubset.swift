import SystemSupport

/// Why a YAML text did not parse, and where.
public struct YAMLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line.
    public let line: Int
    /// What was wrong.
    public let reason: String

    public var description: String { "line \(line): \(reason)" }
}

/// A parser for the subset of YAML that `docs/openapi.yaml` is written in, producing JSON:
/// - block mappings (`key: value`, `key:` then an indented block) and block sequences (`- item`,
///   `- key: value` opening a mapping item), indented with spaces;
/// - plain scalars (`true`, `false`, `null`, numbers, otherwise strings), single- and double-quoted
///   scalars, and one-line flow sequences of scalars (`[a, "b"]`) and empty `{}`/`[]`;
/// - `#` comments.
/// Anything else (anchors, multi-line scalars, tabs, flow mappings with content) is an error, not a
/// guess.
public enum YAMLSubset {
    struct Line {
        let number: Int
        let indent: Int
        let text: String
    }

    /// Parses `text` into JSON.
    public static func parse(_ text: String) throws(YAMLError) -> JSON {
        var lines: [Line] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw)
            let content = try stripComment(line, number: index + 1)
            guard !content.trimmingTrailingSpaces().isEmpty else { continue }
            let indent = content.prefix { $0 == " " }.count
            if content.dropFirst(indent).hasPrefix("\t") {
                throw YAMLError(line: index + 1, reason: "tabs are not allowed for indentation")
            }
            lines.append(
                Line(
                    number: index + 1, indent: indent, text: String(content.dropFirst(indent)).trimmingTrailingSpaces())
            )
        }
        guard !lines.isEmpty else { return .null }
        var parser = Parser(lines: lines)
        let value = try parser.block(indent: lines[0].indent)
        if parser.index < lines.count {
            throw YAMLError(line: lines[parser.index].number, reason: "unexpected indentation")
        }
        return value
    }

    /// The line without its comment (a `#` at the start or after a space, outside quotes).
    static func stripComment(_ line: String, number: Int) throws(YAMLError) -> String {
        var quote: Character?
        var previous: Character = " "
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if let open = quote {
                let next = line.index(after: index)
                if open == "'" && character == "'" && next < line.endIndex && line[next] == "'" {
                    // '' is a quote inside a single-quoted scalar.
                    index = line.index(after: next)
                    continue
                }
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                if previous == " " || previous == "[" || previous == "," || previous == ":" { quote = character }
            } else if character == "#" && (previous == " " || previous == "\t") {
                return String(line[..<index])
            }
            if character == "\\" && quote == "\"" {
                index = line.index(after: index)
                guard index < line.endIndex else { break }
            }
            previous = line[index]
            index = line.index(after: index)
        }
        return line
    }

    struct Parser {
        let lines: [Line]
        var index = 0

        /// The block starting at the current line, which is at `indent`.
        mutating func block(indent: Int) throws(YAMLError) -> JSON {
            let line = lines[index]
            if line.text == "-" || line.text.hasPrefix("- ") { return try sequence(indent: indent) }
            return try mapping(indent: indent)
        }

        mutating func sequence(indent: Int) throws(YAMLError) -> JSON {
            var items: [JSON] = []
            while index < lines.count, lines[index].indent == indent,
                lines[index].text == "-" || lines[index].text.hasPrefix("- ")
            {
                let line = lines[index]
                let rest = String(line.text.dropFirst(1)).trimmingLeadingSpaces()
                let itemIndent = indent + 1 + (line.text.count - 1 - rest.count)
                if rest.isEmpty {
                    index += 1
                    items.append(try nested(after: line, parentIndent: indent))
                } else if splitKey(rest) != nil {
                    // "- key: value" opens a mapping whose keys sit where `key` does.
                    var replaced = lines
                    replaced[index] = Line(number: line.number, indent: itemIndent, text: rest)
                    var inner = Parser(lines: replaced, index: index)
                    items.append(try inner.mapping(indent: itemIndent))
                    index = inner.index
                } else {
                    items.append(try scalarOrFlow(rest, line: line.number))
                    index += 1
                }
            }
            return .array(items)
        }

        mutating func mapping(indent: Int) throws(YAMLError) -> JSON {
            var members: [(String, JSON)] = []
            while index < lines.count, lines[index].indent == indent {
                let line = lines[index]
                if line.text == "-" || line.text.hasPrefix("- ") {
                    throw YAMLError(line: line.number, reason: "a sequence item where a mapping key was expected")
                }
                guard let (rawKey, rest) = splitKey(line.text) else {
                    throw YAMLError(line: line.number, reason: "expected 'key: value'")
                }
                let key = try keyText(rawKey, line: line.number)
                guard !members.contains(where: { $0.0 == key }) else {
                    throw YAMLError(line: line.number, reason: "duplicate key '\(key)'")
                }
                index += 1
                if rest.isEmpty {
                    members.append((key, try nested(after: line, parentIndent: indent, sequenceMayShareIndent: true)))
                } else {
                    members.append((key, try scalarOrFlow(rest, line: line.number)))
                }
            }
            if index < lines.count, lines[index].indent > indent {
                throw YAMLError(line: lines[index].number, reason: "unexpected indentation")
            }
            return .object(members)
        }

        /// The value of a `key:` or `-` with nothing after it: the indented block below, or null.
        mutating func nested(after line: Line, parentIndent: Int, sequenceMayShareIndent: Bool = false)
            throws(YAMLError)
            -> JSON
        {
            guard index < lines.count else { return .null }
            let next = lines[index]
            if next.indent > parentIndent { return try block(indent: next.indent) }
            if sequenceMayShareIndent && next.indent == parentIndent && (next.text == "-" || next.text.hasPrefix("- "))
            {
                return try sequence(indent: parentIndent)
            }
            return .null
        }
    }

    /// Splits `key: rest` (or `key:`) at the first `: ` outside quotes.
    static func splitKey(_ text: String) -> (String, String)? {
        var quote: Character?
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if (character == "\"" || character == "'") && index == text.startIndex {
                quote = character
            } else if character == ":" {
                let after = text.index(after: index)
                if after == text.endIndex { return (String(text[..<index]), "") }
                if text[after] == " " {
                    return (String(text[..<index]), String(text[after...]).trimmingLeadingSpaces())
                }
            } else if character == "[" || character == "{" {
                if index == text.startIndex { return nil }
            }
            index = text.index(after: index)
        }
        return nil
    }

    static func keyText(_ raw: String, line: Int) throws(YAMLError) -> String {
        let key = raw.trimmingTrailingSpaces()
        if key.hasPrefix("\"") || key.hasPrefix("'") {
            guard case .string(let text) = try scalar(key, line: line) else {
                throw YAMLError(line: line, reason: "bad quoted key")
            }
            return text
        }
        return key
    }

    static func scalarOrFlow(_ text: String, line: Int) throws(YAMLError) -> JSON {
        if text == "{}" { return .object([]) }
        if text.hasPrefix("{") { throw YAMLError(line: line, reason: "flow mappings are not supported") }
        if text.hasPrefix("[") {
            guard text.hasSuffix("]") else { throw YAMLError(line: line, reason: "unterminated flow sequence") }
            let inner = String(text.dropFirst().dropLast()).trimmingLeadingSpaces().trimmingTrailingSpaces()
            guard !inner.isEmpty else { return .array([]) }
            return .array(
                try splitFlow(inner, line: line).map { item throws(YAMLError) in try scalar(item, line: line) })
        }
        if text.hasPrefix("&") || text.hasPrefix("*") || text.hasPrefix("|") || text.hasPrefix(">")
            || text.hasPrefix("!")
        {
            throw YAMLError(line: line, reason: "anchors, tags and block scalars are not supported")
        }
        return try scalar(text, line: line)
    }

    static func splitFlow(_ text: String, line: Int) throws(YAMLError) -> [String] {
        var items: [String] = []
        var current = ""
        var quote: Character?
        for character in text {
            if let open = quote {
                current.append(character)
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
                current.append(character)
            } else if character == "," {
                items.append(current.trimmingLeadingSpaces().trimmingTrailingSpaces())
                current = ""
            } else if character == "[" || character == "{" {
                throw YAMLError(line: line, reason: "nested flow collections are not supported")
            } else {
                current.append(character)
            }
        }
        items.append(current.trimmingLeadingSpaces().trimmingTrailingSpaces())
        return items
    }

    static func scalar(_ text: String, line: Int) throws(YAMLError) -> JSON {
        if text.hasPrefix("'") {
            guard text.count >= 2, text.hasSuffix("'") else {
                throw YAMLError(line: line, reason: "unterminated string")
            }
            return .string(String(text.dropFirst().dropLast()).replacingAll("''", with: "'"))
        }
        if text.hasPrefix("\"") {
            guard text.count >= 2, text.hasSuffix("\"") else {
                throw YAMLError(line: line, reason: "unterminated string")
            }
            return .string(try unescape(String(text.dropFirst().dropLast()), line: line))
        }
        switch text {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null", "~": return .null
        default: break
        }
        if isNumber(text), let value = Double(text) { return .number(value) }
        return .string(text)
    }

    static func isNumber(_ text: String) -> Bool {
        var bytes = Array(text.utf8)
        if bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
        guard let first = bytes.first, first >= 48 && first <= 57 else { return false }
        var dots = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                dots += 1
            } else if byte < 48 || byte > 57 {
                return false
            }
        }
        return dots <= 1 && bytes.last != UInt8(ascii: ".")
    }

    static func unescape(_ text: String, line: Int) throws(YAMLError) -> String {
        var out = ""
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            guard character == "\\" else {
                out.append(character)
                continue
            }
            switch iterator.next() {
            case "\"": out.append("\"")
            case "\\": out.append("\\")
            case "/": out.append("/")
            case "n": out.append("\n")
            case "t": out.append("\t")
            default: throw YAMLError(line: line, reason: "unsupported escape in a double-quoted string")
            }
        }
        return out
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }

    func trimmingLeadingSpaces() -> String { String(drop { $0 == " " }) }

    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
