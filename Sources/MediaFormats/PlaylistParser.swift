/// A media playlist read back by the verifier.
public struct ParsedMediaPlaylist: Sendable {
    /// A segment entry.
    public struct Segment: Sendable {
        /// The EXTINF duration, seconds.
        public var duration: Double
        /// The URI line.
        public var uri: String
        /// The EXT-X-BYTERANGE, its offset resolved.
        public var byteRange: (length: Int, offset: Int)?
        /// The EXT-X-KEY attributes in force, or nil when none was given.
        public var key: AttributeList?
        /// The EXT-X-MAP attributes in force (the init segment an fMP4 segment is read behind), or nil.
        public var map: AttributeList? = nil
        /// The URI's line number, from 1.
        public var line: Int
    }

    /// EXT-X-VERSION, if given.
    public var version: Int?
    /// EXT-X-TARGETDURATION, if given.
    public var targetDuration: Int?
    /// EXT-X-MEDIA-SEQUENCE (0 when absent).
    public var mediaSequence = 0
    /// EXT-X-PLAYLIST-TYPE, if given.
    public var playlistType: String?
    /// True when EXT-X-INDEPENDENT-SEGMENTS is present.
    public var independentSegments = false
    /// True when EXT-X-I-FRAMES-ONLY is present.
    public var iFramesOnly = false
    /// True when EXT-X-ENDLIST is present.
    public var endList = false
    /// True when some EXTINF is written with a decimal point (version 3 or later).
    public var hasDecimalDurations = false
    /// The segments in order.
    public var segments: [Segment] = []
    /// Every EXT-X-KEY line's attributes, in order.
    public var keyLines: [AttributeList] = []
    /// Every EXT-X-MAP line's attributes, in order: one per key period in fMP4 output, none in TS.
    public var mapLines: [AttributeList] = []
    /// Tags the packager never writes, with their line numbers.
    public var unknownTags: [String] = []

    /// The longest EXTINF accepted, in seconds (about 11.6 days): far beyond any segment, small enough
    /// that sums and rates over a playlist's durations stay ordinary numbers.
    public static let maximumDuration = 1_000_000.0
    /// The largest byte range length or offset accepted: the largest segment the verifier reads.
    public static let byteRangeLimit = 512 << 20

    /// Parses `text`, naming `name` in errors; malformed lines throw.
    public init(_ text: String, name: String) throws(FormatError) {
        // CRLF is one Character, which a split at "\n" would leave inside a line (RFC 8216 allows both).
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        guard lines.first == "#EXTM3U" else { throw FormatError(name, "does not start with #EXTM3U") }
        var duration: Double? = nil
        var range: (length: Int, offset: Int)? = nil
        var key: AttributeList? = nil
        var map: AttributeList? = nil
        var nextOffset: [String: Int] = [:]
        for (index, raw) in lines.enumerated().dropFirst() {
            let number = index + 1
            let line = String(raw)
            let place = "\(name) line \(number)"
            if line.isEmpty { continue }
            if !line.hasPrefix("#") {
                guard let seconds = duration else { throw FormatError(place, "segment URI without a preceding EXTINF") }
                var byteRange = range
                if let pending = range, pending.offset < 0 {
                    byteRange = (pending.length, nextOffset[line] ?? 0)
                }
                if let byteRange {
                    // Both are at most byteRangeLimit, so the sum cannot overflow.
                    let end = byteRange.offset + byteRange.length
                    guard end <= ParsedMediaPlaylist.byteRangeLimit else {
                        throw FormatError(
                            place,
                            "byte range \(byteRange.length)@\(byteRange.offset) ends past "
                                + "\(ParsedMediaPlaylist.byteRangeLimit) bytes, the largest segment read")
                    }
                    nextOffset[line] = end
                }
                segments.append(
                    Segment(duration: seconds, uri: line, byteRange: byteRange, key: key, map: map, line: number))
                duration = nil
                range = nil
                continue
            }
            guard line.hasPrefix("#EXT") else { continue }  // a comment
            let colon = line.firstIndex(of: ":")
            let tag = colon.map { String(line[..<$0]) } ?? line
            let value = colon.map { String(line[line.index(after: $0)...]) } ?? ""
            switch tag {
            case "#EXT-X-VERSION":
                guard version == nil else { throw FormatError(place, "a second EXT-X-VERSION") }
                guard let parsed = Int(value), parsed > 0 else { throw FormatError(place, "bad version '\(value)'") }
                version = parsed
            case "#EXT-X-TARGETDURATION":
                guard targetDuration == nil else { throw FormatError(place, "a second EXT-X-TARGETDURATION") }
                guard let parsed = Int(value), parsed >= 0 else {
                    throw FormatError(place, "TARGETDURATION '\(value)' is not a decimal integer")
                }
                targetDuration = parsed
            case "#EXT-X-MEDIA-SEQUENCE":
                guard let parsed = Int(value), parsed >= 0 else { throw FormatError(place, "bad media sequence") }
                mediaSequence = parsed
            case "#EXT-X-PLAYLIST-TYPE": playlistType = value
            case "#EXT-X-INDEPENDENT-SEGMENTS": independentSegments = true
            case "#EXT-X-I-FRAMES-ONLY": iFramesOnly = true
            case "#EXT-X-ENDLIST": endList = true
            case "#EXT-X-KEY":
                let attributes = try AttributeList(strict: value, structure: place)
                keyLines.append(attributes)
                key = attributes["METHOD"] == "NONE" ? nil : attributes
            case "#EXTINF":
                let text = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                duration = try ParsedMediaPlaylist.duration(String(text), place: place)
                if text.contains(".") { hasDecimalDurations = true }
            case "#EXT-X-BYTERANGE":
                range = try ParsedMediaPlaylist.byteRange(value, place: place)
            case "#EXT-X-MAP":
                let attributes = try AttributeList(strict: value, structure: place)
                map = attributes
                mapLines.append(attributes)
            default:
                unknownTags.append("\(place): \(tag)")
            }
        }
        if duration != nil { throw FormatError(name, "ends with an EXTINF that has no segment URI") }
    }

    /// An EXTINF duration: a decimal-floating-point (digits with at most one point, RFC 8216 §4.2; no
    /// sign, exponent, `inf` or `nan`), more than 0 and at most `maximumDuration` seconds.
    public static func duration(_ text: String, place: String) throws(FormatError) -> Double {
        let isDecimal =
            !text.isEmpty && text != "." && text.filter({ $0 == "." }).count <= 1
            && text.allSatisfy { $0 == "." || ("0"..."9").contains($0) }
        guard isDecimal, let seconds = Double(text) else {
            throw FormatError(place, "EXTINF duration '\(text.prefix(40))' is not a decimal number of seconds")
        }
        guard seconds > 0, seconds <= maximumDuration else {
            throw FormatError(
                place,
                "EXTINF duration \(text.prefix(40)) is outside 0 (exclusive) to \(Int(maximumDuration)) seconds")
        }
        return seconds
    }

    /// An EXT-X-BYTERANGE value `length[@offset]`, the offset −1 when absent (it follows the previous
    /// range of the same URI); length 1 to `byteRangeLimit`, offset 0 to `byteRangeLimit`.
    public static func byteRange(_ value: String, place: String) throws(FormatError) -> (length: Int, offset: Int) {
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        let isDigits = { (part: Substring) in !part.isEmpty && part.allSatisfy { ("0"..."9").contains($0) } }
        guard parts.count <= 2, parts.allSatisfy(isDigits) else {
            throw FormatError(place, "bad byte range '\(value.prefix(60))': length[@offset] in decimal digits")
        }
        guard let length = Int(parts[0]), length > 0, length <= byteRangeLimit else {
            throw FormatError(
                place, "byte range length \(parts[0].prefix(40)) is outside 1 to \(byteRangeLimit) bytes")
        }
        guard parts.count == 2 else { return (length, -1) }
        guard let offset = Int(parts[1]), offset <= byteRangeLimit else {
            throw FormatError(place, "byte range offset \(parts[1].prefix(40)) is beyond \(byteRangeLimit) bytes")
        }
        return (length, offset)
    }
}

/// A master playlist read back by the verifier.
public struct ParsedMasterPlaylist: Sendable {
    /// An `EXT-X-STREAM-INF` with the URI on the next line.
    public struct Variant: Sendable {
        /// The EXT-X-STREAM-INF attributes.
        public var attributes: AttributeList
        /// The URI line.
        public var uri: String
    }

    /// The variants in order.
    public var variants: [Variant] = []
    /// `EXT-X-MEDIA` attribute lists.
    public var media: [AttributeList] = []
    /// `EXT-X-I-FRAME-STREAM-INF` attribute lists.
    public var iFrameVariants: [AttributeList] = []
    /// EXT-X-VERSION, if given.
    public var version: Int?
    /// True when EXT-X-INDEPENDENT-SEGMENTS is present.
    public var independentSegments = false

    /// Parses `text`, naming `name` in errors.
    public init(_ text: String, name: String) throws(FormatError) {
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }.map(String.init)
        guard lines.first == "#EXTM3U" else { throw FormatError(name, "does not start with #EXTM3U") }
        var pending: AttributeList? = nil
        for (index, line) in lines.enumerated().dropFirst() {
            let place = "\(name) line \(index + 1)"
            if line.isEmpty { continue }
            if !line.hasPrefix("#") {
                guard let attributes = pending else { throw FormatError(place, "URI without EXT-X-STREAM-INF") }
                variants.append(Variant(attributes: attributes, uri: line))
                pending = nil
                continue
            }
            let colon = line.firstIndex(of: ":")
            let tag = colon.map { String(line[..<$0]) } ?? line
            let value = colon.map { String(line[line.index(after: $0)...]) } ?? ""
            switch tag {
            case "#EXT-X-STREAM-INF": pending = try AttributeList(strict: value, structure: place)
            case "#EXT-X-MEDIA": media.append(try AttributeList(strict: value, structure: place))
            case "#EXT-X-I-FRAME-STREAM-INF": iFrameVariants.append(try AttributeList(strict: value, structure: place))
            case "#EXT-X-VERSION": version = Int(value)
            case "#EXT-X-INDEPENDENT-SEGMENTS": independentSegments = true
            case "#EXTINF", "#EXT-X-TARGETDURATION":
                throw FormatError(place, "\(tag) in a master playlist: this is a media playlist")
            default: break
            }
        }
        if pending != nil { throw FormatError(name, "ends with an EXT-X-STREAM-INF that has no URI") }
    }
}
