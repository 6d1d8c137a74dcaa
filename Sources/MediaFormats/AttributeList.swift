/// An HLS attribute list (RFC 8216 §4.2): `NAME=value` pairs separated by commas, each value a quoted
/// string or an unquoted token, as on `EXT-X-KEY`, `EXT-X-STREAM-INF` or `EXT-X-MEDIA`.
///
/// It is read in one of two modes:
/// - `strict`, for playlists GuardPlay wrote and verifies: every deviation from §4.2 throws a
///   `FormatError` that names it (a lowercase or empty name, whitespace, an empty or unterminated value,
///   text after a closing quote, a repeated name, a trailing comma, an empty list);
/// - `lenient`, for third-party playlists the player and the gateway read: it takes what players take
///   (whitespace around names and values, stray and trailing commas, valueless names, an unterminated
///   quote running to the end) and never throws, but a quoted value always runs to its closing quote, so
///   a comma inside quotes never splits it.
///
/// Names are compared exactly, as FFmpeg and hls.js compare them: a lowercase `uri` is not `URI`.
/// When a lenient list repeats a name, lookups see the last one, as FFmpeg's and hls.js's do.
public struct AttributeList: Sendable, Equatable {
    /// How deviations from RFC 8216 §4.2 are treated.
    public enum Mode: Sendable, Equatable {
        /// Every deviation is a `FormatError`.
        case strict
        /// Deviations are read the way players read them.
        case lenient
    }

    /// One `NAME=value` pair.
    public struct Attribute: Sendable, Equatable {
        /// The name as written (lenient lists trim whitespace around it).
        public var name: String
        /// The value, without its quotes.
        public var value: String
        /// True when the value was written as a quoted string.
        public var isQuoted: Bool
        /// False only for a lenient quoted value whose closing quote is missing; it runs to the end.
        public var isClosed: Bool
        /// Where the value lies in the text parsed, inside its quotes: splice here to replace it.
        public var valueRange: Range<String.Index>
    }

    /// The mode the list was read in; the typed accessors follow it.
    public let mode: Mode
    /// The attributes in the order written.
    public let attributes: [Attribute]
    /// What the list is named in errors, such as `video.m3u8 line 7`.
    private let structure: String

    /// Reads `text` strictly, naming `structure` in errors.
    public init(strict text: Substring, structure: String) throws(FormatError) {
        self.mode = .strict
        self.structure = structure
        self.attributes = try Self.scan(text, mode: .strict, structure: structure)
    }

    /// Reads `text` strictly, naming `structure` in errors.
    public init(strict text: String, structure: String) throws(FormatError) {
        try self.init(strict: text[...], structure: structure)
    }

    /// Reads `text` leniently. Its indices are those of the string `text` is a slice of, so a value's
    /// `valueRange` can be replaced in the whole line.
    public init(lenient text: Substring) {
        self.mode = .lenient
        self.structure = "attribute list"
        // The lenient scan recovers from every deviation and so never reaches a throw.
        self.attributes = (try? Self.scan(text, mode: .lenient, structure: "attribute list")) ?? []
    }

    /// Reads the attribute list of a tag line such as `#EXT-X-KEY:METHOD=NONE` leniently: the text after
    /// the first colon, or nothing when there is none.
    public init(lenientTagLine line: String) {
        guard let colon = line.firstIndex(of: ":") else {
            self.init(lenient: line[line.endIndex...])
            return
        }
        self.init(lenient: line[line.index(after: colon)...])
    }

    /// The value of the last attribute called `name`, quotes removed; nil when there is none.
    public subscript(name: String) -> String? { attributes.last(where: { $0.name == name })?.value }

    /// The attributes by name (the last of a repeated name), quotes removed.
    public var dictionary: [String: String] {
        var result: [String: String] = [:]
        for attribute in attributes { result[attribute.name] = attribute.value }
        return result
    }

    // MARK: Typed values (RFC 8216 §4.2)

    /// A `decimal-integer`: 1 to 20 digits, at most 2⁶⁴−1. Nil when absent; throws when it is quoted
    /// (strict) or not such an integer.
    public func decimalInteger(_ name: String) throws(FormatError) -> UInt64? {
        guard let attribute = try unquoted(name, "a decimal integer") else { return nil }
        let text = attribute.value
        guard !text.isEmpty, text.count <= 20, text.allSatisfy(\.isASCIIDigit), let value = UInt64(text) else {
            throw FormatError(structure, "\(name)=\(text.prefix(40)) is not a decimal integer (0 to 2^64-1)")
        }
        return value
    }

    /// A `hexadecimal-sequence` as bytes: `0x` or `0X` and an even number of hex digits, upper case
    /// only in strict mode. Nil when absent; throws otherwise.
    public func hexadecimalSequence(_ name: String) throws(FormatError) -> [UInt8]? {
        guard let attribute = try unquoted(name, "a hexadecimal sequence") else { return nil }
        let text = attribute.value
        let digits = text.dropFirst(2)
        let allowed: (Character) -> Bool =
            mode == .strict ? { $0.isASCIIDigit || ("A"..."F").contains($0) } : { $0.isHexDigit && $0.isASCII }
        guard text.hasPrefix("0x") || text.hasPrefix("0X"), !digits.isEmpty, digits.allSatisfy(allowed) else {
            let letters = mode == .strict ? "0-9 and A-F" : "0-9, a-f and A-F"
            throw FormatError(structure, "\(name)=\(text.prefix(40)) is not 0x followed by hex digits (\(letters))")
        }
        guard digits.count % 2 == 0 else {
            throw FormatError(structure, "\(name)=\(text.prefix(40)) has an odd number of hex digits")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            bytes.append(UInt8(digits[index..<next], radix: 16) ?? 0)  // every digit was checked above
            index = next
        }
        return bytes
    }

    /// A `decimal-floating-point`: digits with at most one point, no sign or exponent. Nil when absent.
    public func decimalFloatingPoint(_ name: String) throws(FormatError) -> Double? {
        guard let attribute = try unquoted(name, "a decimal number") else { return nil }
        let text = attribute.value
        let points = text.filter { $0 == "." }.count
        guard text.contains(where: \.isASCIIDigit), points <= 1, text.allSatisfy({ $0.isASCIIDigit || $0 == "." }),
            let value = Double(text)
        else { throw FormatError(structure, "\(name)=\(text.prefix(40)) is not a decimal number") }
        return value
    }

    /// A `decimal-resolution`: `WIDTHxHEIGHT` in decimal integers. Nil when absent.
    public func decimalResolution(_ name: String) throws(FormatError) -> (width: Int, height: Int)? {
        guard let attribute = try unquoted(name, "a resolution") else { return nil }
        let parts = attribute.value.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.count <= 9 && $0.allSatisfy(\.isASCIIDigit) }),
            let width = Int(parts[0]), let height = Int(parts[1])
        else { throw FormatError(structure, "\(name)=\(attribute.value.prefix(40)) is not WIDTHxHEIGHT") }
        return (width, height)
    }

    /// A `quoted-string`'s content. Nil when absent; in strict mode throws when the value is unquoted.
    public func quotedString(_ name: String) throws(FormatError) -> String? {
        guard let attribute = attributes.last(where: { $0.name == name }) else { return nil }
        if mode == .strict && !attribute.isQuoted {
            throw FormatError(structure, "\(name) must be a quoted string")
        }
        return attribute.value
    }

    /// An `enumerated-string`. Nil when absent; in strict mode throws when the value is quoted.
    public func enumeratedString(_ name: String) throws(FormatError) -> String? {
        try unquoted(name, "an enumerated string")?.value
    }

    private func unquoted(_ name: String, _ kind: String) throws(FormatError) -> Attribute? {
        guard let attribute = attributes.last(where: { $0.name == name }) else { return nil }
        if mode == .strict && attribute.isQuoted {
            throw FormatError(structure, "\(name) must be \(kind), not a quoted string")
        }
        return attribute
    }

    // MARK: Scanning

    /// The attributes of `text`. In lenient mode every deviation is recovered from, so nothing throws.
    private static func scan(_ text: Substring, mode: Mode, structure: String) throws(FormatError) -> [Attribute] {
        let strict = mode == .strict
        func refuse(_ reason: String) -> FormatError { FormatError(structure, reason) }
        if strict && text.isEmpty { throw refuse("the attribute list is empty") }
        var result: [Attribute] = []
        var index = text.startIndex
        let end = text.endIndex
        while index < end {
            // The name runs to '=' or, when the value is missing, to ','.
            let nameStart = index
            while index < end && text[index] != "=" && text[index] != "," { index = text.index(after: index) }
            let rawName = text[nameStart..<index]
            if index == end || text[index] == "," {
                if strict {
                    throw refuse(
                        rawName.isEmpty
                            ? "an empty attribute (a leading comma or two in a row)"
                            : "attribute '\(rawName.prefix(40))' has no '=' and no value")
                }
                if index < end { index = text.index(after: index) }
                continue
            }
            let name: Substring
            if strict {
                try checkName(rawName, structure: structure)
                name = rawName
            } else {
                name = rawName.trimmingASCIIWhitespace()
            }
            index = text.index(after: index)  // past '='
            if !strict { while index < end && text[index].isASCIIWhitespace { index = text.index(after: index) } }

            let attribute: Attribute
            if index < end && text[index] == "\"" {
                let valueStart = text.index(after: index)
                let close = text[valueStart...].firstIndex(of: "\"")
                if close == nil && strict { throw refuse("the quoted value of \(name) is not closed") }
                let valueEnd = close ?? end
                let value = text[valueStart..<valueEnd]
                if strict, value.contains(where: { $0.isNewline }) {
                    throw refuse("the quoted value of \(name) holds a line break")
                }
                attribute = Attribute(
                    name: String(name), value: String(value), isQuoted: true, isClosed: close != nil,
                    valueRange: valueStart..<valueEnd)
                index = close.map { text.index(after: $0) } ?? end
                if index < end && text[index] != "," {
                    let junkStart = index
                    while index < end && text[index] != "," { index = text.index(after: index) }
                    if strict {
                        throw refuse("unexpected '\(text[junkStart..<index].prefix(16))' after \(name)'s value")
                    }
                }
            } else {
                let valueStart = index
                if strict {
                    while index < end && text[index] != "," { index = text.index(after: index) }
                } else {
                    // As FFmpeg reads it: an unquoted value ends at whitespace too; the rest of the item is skipped.
                    while index < end && text[index] != "," && !text[index].isASCIIWhitespace {
                        index = text.index(after: index)
                    }
                }
                let valueEnd = index
                let value = text[valueStart..<valueEnd]
                if strict {
                    if value.isEmpty {
                        throw refuse("\(name) has an empty value; write \(name)=\"\" for an empty string")
                    }
                    if value.contains(where: { $0.isWhitespace }) {
                        throw refuse("the value of \(name) holds whitespace")
                    }
                    if value.contains("\"") { throw refuse("the unquoted value of \(name) holds a quote") }
                } else {
                    while index < end && text[index] != "," { index = text.index(after: index) }
                }
                attribute = Attribute(
                    name: String(name), value: String(value), isQuoted: false, isClosed: true,
                    valueRange: valueStart..<valueEnd)
            }
            if strict && result.contains(where: { $0.name == attribute.name }) {
                throw refuse("attribute \(name) appears twice")
            }
            if !name.isEmpty { result.append(attribute) }
            if index < end {  // at ','
                index = text.index(after: index)
                if strict && index == end { throw refuse("the attribute list ends with a comma") }
            }
        }
        return result
    }

    /// Refuses a name that is not `[A-Z0-9-]+`, saying what is wrong with it.
    private static func checkName(_ name: Substring, structure: String) throws(FormatError) {
        if name.isEmpty { throw FormatError(structure, "an attribute has no name before '='") }
        if name.contains(where: { $0.isWhitespace }) {
            throw FormatError(structure, "whitespace around attribute name '\(name.prefix(40))'")
        }
        guard name.allSatisfy({ $0.isASCIIDigit || ("A"..."Z").contains($0) || $0 == "-" }) else {
            throw FormatError(structure, "'\(name.prefix(40))' is not an attribute name: A-Z, 0-9 and '-' only")
        }
    }
}

extension Character {
    /// True for `0`…`9` only (not other scripts' digits).
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
    /// True for space and tab.
    fileprivate var isASCIIWhitespace: Bool { self == " " || self == "\t" }
}

extension Substring {
    /// Without spaces and tabs at either end.
    fileprivate func trimmingASCIIWhitespace() -> Substring {
        var result = self
        while result.first == " " || result.first == "\t" { result = result.dropFirst() }
        while result.last == " " || result.last == "\t" { result = result.dropLast() }
        return result
    }
}
