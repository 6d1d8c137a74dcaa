import Crypto

/// A static DASH MPD read back: the subset `DASHManifest` writes (ISO/IEC 23009-1), with its Periods as
/// a list. Each Period holds adaptation sets of one representation each, with a `SegmentTemplate` and
/// a `SegmentTimeline` whose `S` runs are expanded to one start and duration per segment. What the
/// writer never writes (a dynamic MPD, `SegmentBase`, `SegmentList`, a negative `r`, an element or
/// attribute it does not know where the subset has none) is a `FormatError`, as is a timeline of
/// more than `segmentLimit` segments.
public struct ParsedDASHManifest: Equatable, Sendable {
    /// One segment of a timeline, in the representation's timescale.
    public struct Segment: Equatable, Sendable {
        public var start: UInt64
        public var duration: UInt64

        /// A segment from `start` lasting `duration`.
        public init(start: UInt64, duration: UInt64) {
            self.start = start
            self.duration = duration
        }
    }

    /// A `Representation` with its `SegmentTemplate`.
    public struct Representation: Equatable, Sendable {
        public var id: String
        public var codecs: String
        public var bandwidth: Int
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
        public var sampleRate: Int?
        /// The `AudioChannelConfiguration` value.
        public var channels: Int?
        public var timescale: UInt32
        public var presentationTimeOffset: UInt64
        public var initialization: String
        public var media: String
        public var startNumber: Int
        public var segments: [Segment]
    }

    /// An `AdaptationSet`, with its content protection.
    public struct AdaptationSet: Equatable, Sendable {
        public var id: String
        public var contentType: String
        public var mimeType: String
        public var language: String?
        /// The `mp4protection` value (`cbcs`, `cenc`), or nil for clear segments.
        public var scheme: String?
        /// `cenc:default_KID`, 16 bytes, when there is protection.
        public var keyID: [UInt8]?
        /// True when the Clear Key system is declared.
        public var clearKey: Bool
        /// The Clear Key `dashif:Laurl`, when there is one.
        public var licenseURL: String?
        public var representations: [Representation]
    }

    /// A `Period`.
    public struct Period: Equatable, Sendable {
        public var id: String
        /// The `start` attribute, in seconds.
        public var start: Double
        /// The `duration` attribute, in seconds, which the writer gives each Period of several.
        public var duration: Double?
        public var adaptationSets: [AdaptationSet]
    }

    /// Segments in one timeline at most.
    public static let segmentLimit = 1_000_000

    /// `mediaPresentationDuration`, in seconds.
    public var duration: Double
    /// `minBufferTime`, in seconds.
    public var minBufferTime: Double
    /// The Periods, in order.
    public var periods: [Period]

    /// Reads the MPD `text`; `structure` names it in errors.
    public init(_ text: String, structure: String = "manifest.mpd") throws(FormatError) {
        let root = try MarkupElement.parse(text, structure: structure)
        let reader = DASHElementReader(root, structure: structure)
        guard root.name == "MPD" else { throw FormatError(structure, "the root element is <\(root.name)>, not <MPD>") }
        try reader.allow([
            "xmlns", "xmlns:cenc", "xmlns:dashif", "profiles", "type", "mediaPresentationDuration", "minBufferTime",
        ])
        guard try reader.string("type") == "static" else { throw reader.fail("type is not static") }
        duration = try reader.duration("mediaPresentationDuration")
        minBufferTime = try reader.duration("minBufferTime")
        try reader.only(["Period"])
        periods = []
        for element in root.children {
            periods.append(try Self.period(element, structure: structure + " Period \(periods.count)"))
        }
        guard !periods.isEmpty else { throw FormatError(structure, "has no Period") }
    }

    private static func period(_ element: MarkupElement, structure: String) throws(FormatError) -> Period {
        let reader = DASHElementReader(element, structure: structure)
        try reader.allow(["id", "start", "duration"])
        try reader.only(["AdaptationSet"])
        var period = Period(
            id: try reader.string("id"), start: try reader.duration("start"),
            duration: reader.optional("duration") == nil ? nil : try reader.duration("duration"), adaptationSets: [])
        for child in element.children {
            period.adaptationSets.append(
                try adaptationSet(child, structure: structure + " AdaptationSet \(period.adaptationSets.count)"))
        }
        return period
    }

    private static func adaptationSet(_ element: MarkupElement, structure: String) throws(FormatError)
        -> AdaptationSet
    {
        let reader = DASHElementReader(element, structure: structure)
        try reader.allow(["id", "contentType", "mimeType", "segmentAlignment", "startWithSAP", "lang"])
        try reader.only(["ContentProtection", "Representation"])
        var set = AdaptationSet(
            id: try reader.string("id"), contentType: try reader.string("contentType"),
            mimeType: try reader.string("mimeType"), language: reader.optional("lang"), scheme: nil, keyID: nil,
            clearKey: false, licenseURL: nil, representations: [])
        for child in element.children where child.name == "ContentProtection" {
            let protection = DASHElementReader(child, structure: structure + " ContentProtection")
            switch try protection.string("schemeIdUri") {
            case "urn:mpeg:dash:mp4protection:2011":
                try protection.allow(["schemeIdUri", "value", "cenc:default_KID"])
                try protection.only([])
                guard set.scheme == nil else { throw protection.fail("a second mp4protection descriptor") }
                set.scheme = try protection.string("value")
                let uuid = try protection.string("cenc:default_KID")
                guard uuid.count == 36,
                    [8, 13, 18, 23].allSatisfy({ uuid[uuid.index(uuid.startIndex, offsetBy: $0)] == "-" }),
                    let bytes = [UInt8](hex: uuid.replacing("-", with: "")), bytes.count == 16
                else { throw protection.fail("cenc:default_KID '\(uuid)' is not a UUID") }
                set.keyID = bytes
            case DASHManifest.clearKeySystem:
                try protection.allow(["schemeIdUri", "value"])
                try protection.only(["dashif:Laurl"])
                guard !set.clearKey else { throw protection.fail("a second Clear Key descriptor") }
                guard try protection.string("value") == "ClearKey1.0" else {
                    throw protection.fail("value is not ClearKey1.0")
                }
                set.clearKey = true
                if let laurl = child.children.first {
                    guard child.children.count == 1, laurl.attributes.isEmpty, laurl.children.isEmpty else {
                        throw protection.fail("dashif:Laurl holds more than its URL")
                    }
                    set.licenseURL = laurl.text
                }
            case let other: throw protection.fail("unknown schemeIdUri '\(other)'")
            }
        }
        for child in element.children where child.name == "Representation" {
            set.representations.append(
                try representation(child, structure: structure + " Representation \(set.representations.count)"))
        }
        return set
    }

    private static func representation(_ element: MarkupElement, structure: String) throws(FormatError)
        -> Representation
    {
        let reader = DASHElementReader(element, structure: structure)
        try reader.allow(["id", "codecs", "bandwidth", "width", "height", "frameRate", "audioSamplingRate"])
        try reader.only(["AudioChannelConfiguration", "SegmentTemplate"])
        let templates = element.children(named: "SegmentTemplate")
        let channels = element.children(named: "AudioChannelConfiguration")
        guard templates.count == 1, channels.count <= 1 else {
            throw reader.fail("needs one SegmentTemplate and at most one AudioChannelConfiguration")
        }
        var representation = Representation(
            id: try reader.string("id"), codecs: try reader.string("codecs"),
            bandwidth: try reader.integer("bandwidth"),
            width: try reader.optionalInteger("width"), height: try reader.optionalInteger("height"),
            frameRate: try reader.optionalNumber("frameRate"),
            sampleRate: try reader.optionalInteger("audioSamplingRate"),
            channels: nil, timescale: 1, presentationTimeOffset: 0, initialization: "", media: "", startNumber: 0,
            segments: [])
        if let channel = channels.first {
            let configuration = DASHElementReader(channel, structure: structure + " AudioChannelConfiguration")
            try configuration.allow(["schemeIdUri", "value"])
            try configuration.only([])
            guard try configuration.string("schemeIdUri") == "urn:mpeg:dash:23003:3:audio_channel_configuration:2011"
            else { throw configuration.fail("unknown schemeIdUri") }
            representation.channels = try configuration.integer("value")
        }
        let template = DASHElementReader(templates[0], structure: structure + " SegmentTemplate")
        try template.allow(["timescale", "presentationTimeOffset", "initialization", "media", "startNumber"])
        try template.only(["SegmentTimeline"])
        guard let timescale = UInt32(exactly: try template.integer("timescale")), timescale > 0 else {
            throw template.fail("timescale is not from 1 to \(UInt32.max)")
        }
        representation.timescale = timescale
        representation.presentationTimeOffset = try template.unsigned("presentationTimeOffset")
        representation.initialization = try template.string("initialization")
        representation.media = try template.string("media")
        representation.startNumber = try template.integer("startNumber")
        guard templates[0].children.count == 1 else { throw template.fail("needs one SegmentTimeline") }
        let timeline = templates[0].children[0]
        let timelineReader = DASHElementReader(timeline, structure: structure + " SegmentTimeline")
        try timelineReader.allow([])
        try timelineReader.only(["S"])
        var next: UInt64 = 0
        let runStructure = structure + " S"
        for s in timeline.children {
            let run = DASHElementReader(s, structure: runStructure, number: representation.segments.count)
            try run.allow(DASHElementReader.segmentRunAttributes)
            try run.only([])
            let start = try run.optionalUnsigned("t") ?? next
            let duration = try run.unsigned("d")
            let repeats = try run.optionalUnsigned("r") ?? 0
            guard repeats < UInt64(segmentLimit - representation.segments.count) else {
                throw run.fail("the timeline has more than \(segmentLimit) segments")
            }
            let (span, overflow) = duration.multipliedReportingOverflow(by: repeats + 1)
            guard !overflow, start <= UInt64.max - span else { throw run.fail("the run ends past 2^64 ticks") }
            for index in 0...repeats {
                representation.segments.append(Segment(start: start + index * duration, duration: duration))
            }
            next = start + span
        }
        return representation
    }
}

/// Reads one element's attributes for `ParsedDASHManifest`, naming the element in errors.
private struct DASHElementReader {
    let element: MarkupElement
    let structure: String
    /// The element's number among its like (an `S` run's first segment), put after `structure` in errors.
    let number: Int?

    /// The attributes of an `S` run, of which a timeline has many.
    static let segmentRunAttributes: Set<String> = ["t", "d", "r"]

    init(_ element: MarkupElement, structure: String, number: Int? = nil) {
        self.element = element
        self.structure = structure
        self.number = number
    }

    func fail(_ reason: String) -> FormatError {
        FormatError(number.map { "\(structure) \($0)" } ?? structure, reason)
    }

    /// Refuses an attribute not in `names`, naming the first unknown one in sorted order.
    func allow(_ names: Set<String>) throws(FormatError) {
        guard !element.attributes.keys.allSatisfy(names.contains) else { return }
        if let unknown = element.attributes.keys.sorted().first(where: { !names.contains($0) }) {
            throw fail("unknown attribute \(unknown)")
        }
    }

    /// Refuses a child element not in `names`, and character data other than whitespace.
    func only(_ names: Set<String>) throws(FormatError) {
        if let unknown = element.children.first(where: { !names.contains($0.name) }) {
            throw fail("unknown element <\(unknown.name)>")
        }
        guard element.text.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) else {
            throw fail("holds character data")
        }
    }

    func optional(_ name: String) -> String? { element.attributes[name] }

    func string(_ name: String) throws(FormatError) -> String {
        guard let value = element.attributes[name] else { throw fail("has no \(name)") }
        return value
    }

    /// A decimal integer of at most 18 digits, not negative.
    static func digits(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(text)
    }

    func integer(_ name: String) throws(FormatError) -> Int {
        guard let value = Self.digits(try string(name)) else { throw fail("\(name) is not a non-negative integer") }
        return value
    }

    func optionalInteger(_ name: String) throws(FormatError) -> Int? {
        element.attributes[name] == nil ? nil : try integer(name)
    }

    func unsigned(_ name: String) throws(FormatError) -> UInt64 {
        let text = try string(name)
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = UInt64(text)
        else { throw fail("\(name) is not an integer from 0 to 2^64 - 1") }
        return value
    }

    func optionalUnsigned(_ name: String) throws(FormatError) -> UInt64? {
        element.attributes[name] == nil ? nil : try unsigned(name)
    }

    /// A decimal number such as `29.970`: digits, one optional point and more digits.
    static func decimal(_ text: Substring) -> Double? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard !text.isEmpty, text.utf8.count <= 32, !parts[0].isEmpty, parts.count == 1 || !parts[1].isEmpty,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } })
        else { return nil }
        return Double(text)
    }

    func optionalNumber(_ name: String) throws(FormatError) -> Double? {
        guard let text = element.attributes[name] else { return nil }
        guard let value = Self.decimal(Substring(text)) else { throw fail("\(name) '\(text)' is not a decimal number") }
        return value
    }

    /// An ISO 8601 duration of hours, minutes and seconds, such as `PT10.020S`, `PT0S` or `PT1H2M3S`, in
    /// seconds.
    func duration(_ name: String) throws(FormatError) -> Double {
        let text = try string(name)
        guard text.hasPrefix("PT"), text.count > 2 else { throw fail("\(name) '\(text)' is not a PTnS duration") }
        var seconds = 0.0
        var rest = Substring(text.dropFirst(2))
        for (unit, scale) in [("H", 3600.0), ("M", 60.0), ("S", 1.0)] {
            guard let end = rest.firstIndex(of: Character(unit)) else { continue }
            guard let value = Self.decimal(rest[..<end]), unit == "S" || !rest[..<end].contains(".") else {
                throw fail("\(name) '\(text)' is not a PTnS duration")
            }
            seconds += value * scale
            rest = rest[rest.index(after: end)...]
        }
        guard rest.isEmpty else { throw fail("\(name) '\(text)' is not a PTnS duration") }
        return seconds
    }
}
