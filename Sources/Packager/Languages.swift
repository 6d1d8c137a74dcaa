/// Language tags as HLS wants them (RFC 5646: the two-letter ISO 639-1 code where one exists) and
/// names for EXT-X-MEDIA, from the ISO 639-2 codes containers carry.
enum Languages {
    private static let table: [String: (tag: String, name: String)] = [
        "eng": ("en", "English"), "fra": ("fr", "French"), "fre": ("fr", "French"), "deu": ("de", "German"),
        "ger": ("de", "German"), "spa": ("es", "Spanish"), "ita": ("it", "Italian"), "por": ("pt", "Portuguese"),
        "nld": ("nl", "Dutch"), "dut": ("nl", "Dutch"), "swe": ("sv", "Swedish"), "nor": ("no", "Norwegian"),
        "dan": ("da", "Danish"), "fin": ("fi", "Finnish"), "pol": ("pl", "Polish"), "ces": ("cs", "Czech"),
        "cze": ("cs", "Czech"), "rus": ("ru", "Russian"), "ukr": ("uk", "Ukrainian"), "ell": ("el", "Greek"),
        "gre": ("el", "Greek"), "tur": ("tr", "Turkish"), "ara": ("ar", "Arabic"), "heb": ("he", "Hebrew"),
        "hin": ("hi", "Hindi"), "jpn": ("ja", "Japanese"), "kor": ("ko", "Korean"), "zho": ("zh", "Chinese"),
        "chi": ("zh", "Chinese"), "tha": ("th", "Thai"), "vie": ("vi", "Vietnamese"), "ind": ("id", "Indonesian"),
        "hun": ("hu", "Hungarian"), "ron": ("ro", "Romanian"), "rum": ("ro", "Romanian"), "cat": ("ca", "Catalan"),
    ]

    /// The RFC 5646 tag for a container's language code, or nil for none or `und`.
    static func tag(_ code: String?) -> String? {
        guard let code = code?.lowercased(), !code.isEmpty, code != "und", code != "mul", code != "zxx" else {
            return nil
        }
        if let known = table[code] { return known.tag }
        guard code.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-") }) else { return nil }
        return code
    }

    /// A readable name for the language, or nil when unknown.
    static func name(_ code: String?) -> String? {
        guard let code = code?.lowercased() else { return nil }
        return table[code]?.name
    }
}
