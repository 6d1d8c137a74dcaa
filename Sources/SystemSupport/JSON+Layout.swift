extension JSON {
    /// The value of a `[String: Any]` tree of `String`, `Bool`, `Int`, `Double`, arrays, dictionaries and
    /// `JSON` values (`JSON.null` for a missing one): the objects the CLI builds for `--json`. Nil when a
    /// leaf is none of these.
    public init?(any value: Any) {
        switch value {
        case let json as JSON: self = json
        case let text as String: self = .string(text)
        case let flag as Bool: self = .bool(flag)
        case let number as Int: self = .number(Double(number))
        case let number as Int32: self = .number(Double(number))
        case let number as Int64: self = .number(Double(number))
        case let number as UInt64: self = .number(Double(number))
        case let number as Double: self = .number(number)
        case let values as [Any]:
            var array: [JSON] = []
            for element in values {
                guard let json = JSON(any: element) else { return nil }
                array.append(json)
            }
            self = .array(array)
        case let members as [String: Any]:
            var object: [(String, JSON)] = []
            for (key, element) in members {
                guard let json = JSON(any: element) else { return nil }
                object.append((key, json))
            }
            self = .object(object)
        default: return nil
        }
    }

    /// The text in the layout `JSONSerialization` wrote, which `--json` output has always had: `/` escaped
    /// as `\/`, integral numbers without `.0`, keys sorted when `sortingKeys`, and with `pretty` two-space
    /// indents, `"key" : value` and a blank line inside an empty array or object.
    public func text(sortingKeys: Bool, pretty: Bool) -> String {
        var out = ""
        write(into: &out, sortingKeys: sortingKeys, indent: pretty ? 0 : nil)
        return out
    }

    private func write(into out: inout String, sortingKeys: Bool, indent: Int?) {
        let inner = indent.map { $0 + 2 }
        func newline(_ level: Int?) {
            if let level { out += "\n" + String(repeating: " ", count: level) }
        }
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let value):
            if !value.isFinite {
                out += "null"
            } else {
                let text = value.description
                out += text.hasSuffix(".0") ? String(text.dropLast(2)) : text
            }
        case .string(let value): Self.writeEscaped(value, into: &out)
        case .array(let values):
            out += "["
            if values.isEmpty { newline(indent.map { _ in 0 }) }
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                newline(inner)
                value.write(into: &out, sortingKeys: sortingKeys, indent: inner)
            }
            newline(indent)
            out += "]"
        case .object(let members):
            out += "{"
            if members.isEmpty { newline(indent.map { _ in 0 }) }
            let ordered = sortingKeys ? members.sorted { $0.0 < $1.0 } : members
            for (index, (key, value)) in ordered.enumerated() {
                if index > 0 { out += "," }
                newline(inner)
                Self.writeEscaped(key, into: &out)
                out += indent == nil ? ":" : " : "
                value.write(into: &out, sortingKeys: sortingKeys, indent: inner)
            }
            newline(indent)
            out += "}"
        }
    }

    private static func writeEscaped(_ value: String, into out: inout String) {
        let hex = Array("0123456789abcdef")
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "/": out += "\\/"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{8}": out += "\\b"
            case "\u{C}": out += "\\f"
            case "\u{0}"..."\u{1F}":
                out += "\\u00" + String(hex[Int(scalar.value >> 4)]) + String(hex[Int(scalar.value & 15)])
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension JSON {
    /// An integer value as `Int` (see `integer`).
    public var int: Int? { integer.map { Int($0) } }
    /// This value when it is an object, else nil.
    public var object: JSON? { members == nil ? nil : self }
    /// The strings of an array made only of strings, else nil.
    public var strings: [String]? {
        guard let values = array else { return nil }
        let strings = values.compactMap(\.string)
        return strings.count == values.count ? strings : nil
    }
}
