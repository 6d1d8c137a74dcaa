/// An element of the small XML subset GuardPlay's DASH manifests are written in: a name, attributes,
/// child elements and the character data directly inside it. `MarkupElement.parse` reads that subset and
/// nothing more: an optional `<?xml …?>` declaration, elements, attributes quoted with `"` or `'`,
/// character data, comments, and the five named entities and numeric character references. A DOCTYPE,
/// CDATA, processing instructions after the declaration, a control character, an unknown entity, a
/// duplicate attribute, a mismatched end tag and anything after the root are `FormatError`s; so is a
/// tree deeper than 32 elements or of more than 200,000, so hostile input stays small.
public struct MarkupElement: Equatable, Sendable {
    /// The element name as written, prefix included (`cenc:pssh`).
    public var name: String
    /// The attributes, by name as written.
    public var attributes: [String: String]
    /// The child elements, in order.
    public var children: [MarkupElement]
    /// The character data directly inside the element, entities resolved, pieces joined.
    public var text: String

    /// Elements nested at most.
    public static let depthLimit = 32
    /// Elements in one document at most.
    public static let elementLimit = 200_000

    /// An element of `name` with `attributes`, `children` and `text`.
    public init(name: String, attributes: [String: String] = [:], children: [MarkupElement] = [], text: String = "") {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// `text` escaped for an XML (or HTML) attribute value in either quote, or for character data: the
    /// five specials as entities; tab, line feed and carriage return as character references, so an
    /// attribute value keeps them; any other character XML 1.0 forbids (C0 controls, U+FFFE, U+FFFF)
    /// replaced by U+FFFD. `parse` reads the result back as `text` with those replacements.
    public static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t": out += "&#9;"
            case "\n": out += "&#10;"
            case "\r": out += "&#13;"
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                out.unicodeScalars.append("\u{FFFD}")
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The children named `name`.
    public func children(named name: String) -> [MarkupElement] { children.filter { $0.name == name } }

    /// The root element of the document `text`; `structure` names the document in errors.
    public static func parse(_ text: String, structure: String) throws(FormatError) -> MarkupElement {
        var parser = MarkupParser(Array(text.utf8), structure: structure)
        return try parser.document()
    }
}

/// The reader behind `MarkupElement.parse`: a cursor over UTF-8 bytes.
private struct MarkupParser {
    let bytes: [UInt8]
    let structure: String
    var position = 0
    var elements = 0

    init(_ bytes: [UInt8], structure: String) {
        self.bytes = bytes
        self.structure = structure
    }

    func fail(_ reason: String) -> FormatError { FormatError(structure, "byte \(position): \(reason)") }

    func starts(with text: String) -> Bool {
        var index = position
        for byte in text.utf8 {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
        }
        return true
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"),
            UInt8(ascii: ":"):
            true
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."): !first
        default: false
        }
    }

    mutating func skipSpace() {
        while position < bytes.count, Self.isSpace(bytes[position]) { position += 1 }
    }

    /// Skips `<!-- … -->` when one starts here; true when it did.
    mutating func skipComment() throws(FormatError) -> Bool {
        guard starts(with: "<!--") else { return false }
        position += 4
        while position < bytes.count {
            if starts(with: "--") {
                guard starts(with: "-->") else { throw fail("'--' inside a comment") }
                position += 3
                return true
            }
            position += 1
        }
        throw fail("a comment is not closed")
    }

    mutating func document() throws(FormatError) -> MarkupElement {
        if starts(with: "<?xml") {
            guard position + 5 < bytes.count, Self.isSpace(bytes[position + 5]) else {
                throw fail("a processing instruction other than the XML declaration")
            }
            while position < bytes.count, !starts(with: "?>") { position += 1 }
            guard position < bytes.count else { throw fail("the XML declaration is not closed") }
            position += 2
        }
        try skipMisc()
        if starts(with: "<!") || starts(with: "<?") {
            throw fail("DOCTYPE, CDATA and processing instructions are not read")
        }
        guard position < bytes.count, bytes[position] == UInt8(ascii: "<") else { throw fail("no root element") }
        let root = try element(depth: 1)
        try skipMisc()
        guard position == bytes.count else { throw fail("content after the root element") }
        return root
    }

    /// Whitespace and comments between the declaration, the root and the end.
    mutating func skipMisc() throws(FormatError) {
        while true {
            skipSpace()
            guard try skipComment() else { return }
        }
    }

    mutating func name() throws(FormatError) -> String {
        let start = position
        while position < bytes.count, Self.isNameByte(bytes[position], first: position == start) { position += 1 }
        guard position > start else { throw fail("expected a name") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// The element whose `<` is at `position`.
    mutating func element(depth: Int) throws(FormatError) -> MarkupElement {
        guard depth <= MarkupElement.depthLimit else {
            throw fail("elements nested deeper than \(MarkupElement.depthLimit)")
        }
        elements += 1
        guard elements <= MarkupElement.elementLimit else {
            throw fail("more than \(MarkupElement.elementLimit) elements")
        }
        position += 1
        var element = MarkupElement(name: try name())
        while true {
            let hadSpace = position < bytes.count && Self.isSpace(bytes[position])
            skipSpace()
            guard position < bytes.count else { throw fail("<\(element.name) is not closed") }
            if starts(with: "/>") {
                position += 2
                return element
            }
            if bytes[position] == UInt8(ascii: ">") {
                position += 1
                break
            }
            guard hadSpace else { throw fail("expected whitespace before an attribute of <\(element.name)>") }
            let attribute = try name()
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "=") else {
                throw fail("attribute \(attribute) has no '='")
            }
            position += 1
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'")
            else { throw fail("attribute \(attribute)'s value is not quoted") }
            let quote = bytes[position]
            position += 1
            let value = try characters(until: quote)
            position += 1
            guard element.attributes.updateValue(value, forKey: attribute) == nil else {
                throw fail("attribute \(attribute) given twice on <\(element.name)>")
            }
        }
        // Content: character data, comments, child elements, then the end tag.
        while true {
            guard position < bytes.count else { throw fail("<\(element.name)> has no end tag") }
            if starts(with: "</") {
                position += 2
                let closing = try name()
                guard closing == element.name else { throw fail("</\(closing)> closes <\(element.name)>") }
                skipSpace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ">") else {
                    throw fail("</\(closing) is not closed")
                }
                position += 1
                return element
            }
            if try skipComment() { continue }
            if starts(with: "<!") || starts(with: "<?") {
                throw fail("DOCTYPE, CDATA and processing instructions are not read")
            }
            if bytes[position] == UInt8(ascii: "<") {
                element.children.append(try self.element(depth: depth + 1))
                continue
            }
            element.text += try characters(until: UInt8(ascii: "<"))
        }
    }

    /// Character data up to (not including) `end`, entities resolved; in an attribute value `end` is
    /// the quote and a `<` is refused. Runs without an entity are taken whole from `bytes`; only text
    /// with an entity is put together in a buffer.
    mutating func characters(until end: UInt8) throws(FormatError) -> String {
        var resolved: [UInt8] = []
        var run = position
        while true {
            guard position < bytes.count else {
                guard end == UInt8(ascii: "<") else { throw fail("an attribute value is not closed") }
                break
            }
            let byte = bytes[position]
            if byte == end { break }
            if byte == UInt8(ascii: "<") { throw fail("'<' inside an attribute value") }
            if byte < 0x20 && !Self.isSpace(byte) { throw fail("control character \(byte)") }
            if byte == UInt8(ascii: "&") {
                resolved += bytes[run..<position]
                resolved += try entity()
                run = position
                continue
            }
            position += 1
        }
        // An entity always resolves to at least one byte, so an empty buffer means none was met.
        guard !resolved.isEmpty else { return String(decoding: bytes[run..<position], as: UTF8.self) }
        resolved += bytes[run..<position]
        return String(decoding: resolved, as: UTF8.self)
    }

    /// The entity or character reference whose `&` is at `position`, as UTF-8.
    mutating func entity() throws(FormatError) -> [UInt8] {
        let start = position
        var end = position + 1
        while end < bytes.count, end - start <= 10, bytes[end] != UInt8(ascii: ";") { end += 1 }
        guard end < bytes.count, bytes[end] == UInt8(ascii: ";") else { throw fail("'&' starts no entity") }
        let body = String(decoding: bytes[(start + 1)..<end], as: UTF8.self)
        position = end + 1
        switch body {
        case "amp": return [UInt8(ascii: "&")]
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default: break
        }
        var digits = Substring(body)
        guard digits.first == "#" else { throw fail("unknown entity &\(body);") }
        digits = digits.dropFirst()
        var radix = 10
        if digits.first == "x" {
            radix = 16
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isHexDigit && (radix == 16 || $0.isNumber) }),
            let value = UInt32(digits, radix: radix), let scalar = Unicode.Scalar(value),
            value >= 0x20 || value == 0x09 || value == 0x0A || value == 0x0D
        else { throw fail("character reference &\(body); is not a character XML allows") }
        return Array(String(Character(scalar)).utf8)
    }
}
