extension Unicode.Scalar {
    /// `CharacterSet.whitespaces`' members: tab and the space separators (Zs).
    public var isHorizontalSpace: Bool { self == "\t" || properties.generalCategory == .spaceSeparator }

    /// `CharacterSet.newlines`' members: U+000A to U+000D, U+0085, U+2028 and U+2029.
    public var isLineBreak: Bool {
        (0x0A...0x0D).contains(value) || value == 0x85 || value == 0x2028 || value == 0x2029
    }
}

extension StringProtocol {
    /// The text without leading and trailing scalars for which `trimmed` holds (what Foundation's
    /// `trimmingCharacters(in:)` does, scalar by scalar, so a `\r\n` pair is two).
    public func trimmingScalars(where trimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !trimmed($0) }),
            let last = scalars.lastIndex(where: { !trimmed($0) })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    /// Without leading and trailing spaces and tabs (`trimmingCharacters(in: .whitespaces)`).
    public func trimmingSpaces() -> String { trimmingScalars(where: \.isHorizontalSpace) }

    /// Without leading and trailing line breaks (`trimmingCharacters(in: .newlines)`).
    public func trimmingLineBreaks() -> String { trimmingScalars(where: \.isLineBreak) }

    /// Without leading and trailing white space and line breaks
    /// (`trimmingCharacters(in: .whitespacesAndNewlines)`).
    public func trimmingSpacesAndLineBreaks() -> String {
        trimmingScalars { $0.isHorizontalSpace || $0.isLineBreak }
    }
}
