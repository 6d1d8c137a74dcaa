import FoundationEssentials
import SystemSupport

/// A static DASH MPD (ISO/IEC 23009-1) for CMAF tracks: one adaptation set per track, each segment
/// listed in a `SegmentTimeline` under a `SegmentTemplate`, and for CENC the `mp4protection`
/// descriptor with `cenc:default_KID` and the DASH-IF Clear Key system.
///
/// Under key rotation every key period is a `Period` of its own: its adaptation sets name the period's
/// key ID and its own init segment (whose `tenc` carries that key ID), and list only the period's
/// segments, numbered on from `startNumber`.
public struct DASHManifest {
    /// One track's representation.
    public struct Representation {
        public var id: String
        /// `video` or `audio`.
        public var contentType: String
        public var codecs: String
        public var bandwidth: Int
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
        public var sampleRate: Int?
        public var channels: Int?
        public var language: String?
        public var timescale: UInt32
        /// The presentation time (in `timescale`) that the period starts at.
        public var presentationTimeOffset: UInt64
        public var initialization: String
        /// The media URL template, with `$Number%05d$` for the segment number (from 0).
        public var media: String
        /// Each segment's start and duration, in `timescale`.
        public var segments: [(start: UInt64, duration: UInt64)]
        /// The number `media`'s `$Number$` takes for the first of `segments`.
        public var startNumber: Int = 0

        /// A representation of every field; the optional ones apply to video or to audio only.
        public init(
            id: String, contentType: String, codecs: String, bandwidth: Int, width: Int? = nil, height: Int? = nil,
            frameRate: Double? = nil, sampleRate: Int? = nil, channels: Int? = nil, language: String? = nil,
            timescale: UInt32, presentationTimeOffset: UInt64, initialization: String, media: String,
            segments: [(start: UInt64, duration: UInt64)]
        ) {
            self.id = id
            self.contentType = contentType
            self.codecs = codecs
            self.bandwidth = bandwidth
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.sampleRate = sampleRate
            self.channels = channels
            self.language = language
            self.timescale = timescale
            self.presentationTimeOffset = presentationTimeOffset
            self.initialization = initialization
            self.media = media
            self.segments = segments
        }
    }

    /// One Period: a key period under rotation, or the whole presentation.
    public struct Period {
        /// Where it starts in the presentation, in seconds; it ends where the next starts.
        public var start: Double
        /// The key ID its segments are encrypted under (unused for clear segments).
        public var keyID: [UInt8]
        public var representations: [Representation]

        /// A period from `start` seconds, under `keyID`.
        public init(start: Double, keyID: [UInt8], representations: [Representation] = []) {
            self.start = start
            self.keyID = keyID
            self.representations = representations
        }
    }

    /// The Clear Key system's identifier (DASH-IF IOP §7.6.2.6).
    static let clearKeySystem = "urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e"

    /// The periods, in presentation order.
    public var periods: [Period]
    /// The presentation's duration in seconds.
    public var duration: Double
    /// `cbcs` or `cenc`, or nil for clear segments.
    public var scheme: String?
    /// The Clear Key license server, when there is one.
    public var licenseURL: String?

    /// A presentation of `duration` seconds in one period, encrypted under `keyID` with `scheme` when it
    /// is given.
    public init(
        representations: [Representation] = [], duration: Double, scheme: String? = nil, keyID: [UInt8] = [],
        licenseURL: String? = nil
    ) {
        self.init(
            periods: [Period(start: 0, keyID: keyID, representations: representations)], duration: duration,
            scheme: scheme, licenseURL: licenseURL)
    }

    /// A presentation of `duration` seconds in `periods`, each under its own key ID with `scheme`.
    public init(periods: [Period], duration: Double, scheme: String? = nil, licenseURL: String? = nil) {
        self.periods = periods
        self.duration = duration
        self.scheme = scheme
        self.licenseURL = licenseURL
    }

    /// The key ID as the 8-4-4-4-12 UUID `cenc:default_KID` takes.
    static func uuid(_ bytes: [UInt8]) -> String {
        let hex = bytes.hexString
        let cuts = [0, 8, 12, 16, 20, 32]
        return (0..<5).map { part in
            let start = hex.index(hex.startIndex, offsetBy: cuts[part])
            return String(hex[start..<hex.index(hex.startIndex, offsetBy: cuts[part + 1])])
        }.joined(separator: "-")
    }

    /// An ISO 8601 duration such as `PT10.020S`.
    static func isoDuration(_ seconds: Double) -> String { String(cFormat: "PT%.3fS", max(seconds, 0)) }

    /// The MPD text.
    public func render() -> String {
        let longest =
            periods.flatMap(\.representations).flatMap { rep in
                rep.segments.map { Double($0.duration) / Double(rep.timescale) }
            }.max() ?? 2
        var lines = [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" xmlns:cenc=\"urn:mpeg:cenc:2013\" "
                + "xmlns:dashif=\"https://dashif.org/\" profiles=\"urn:mpeg:dash:profile:isoff-live:2011\" "
                + "type=\"static\" mediaPresentationDuration=\"\(Self.isoDuration(duration))\" "
                + "minBufferTime=\"\(Self.isoDuration(longest.rounded(.up)))\">",
        ]
        for (number, period) in periods.enumerated() {
            if periods.count == 1 {
                lines.append("  <Period id=\"0\" start=\"PT0S\">")
            } else {
                let end = number + 1 < periods.count ? periods[number + 1].start : duration
                lines.append(
                    "  <Period id=\"\(number)\" start=\"\(Self.isoDuration(period.start))\" "
                        + "duration=\"\(Self.isoDuration(end - period.start))\">")
            }
            for (index, rep) in period.representations.enumerated() {
                lines += adaptationSet(rep, id: index, keyID: period.keyID)
            }
            lines.append("  </Period>")
        }
        lines.append("</MPD>")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The lines of `rep`'s adaptation set, numbered `id`, its segments under `keyID`.
    private func adaptationSet(_ rep: Representation, id: Int, keyID: [UInt8]) -> [String] {
        var lines: [String] = []
        var set =
            "    <AdaptationSet id=\"\(id)\" contentType=\"\(MarkupElement.escaped(rep.contentType))\" "
            + "mimeType=\"\(MarkupElement.escaped(rep.contentType))/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\""
        if let language = rep.language { set += " lang=\"\(MarkupElement.escaped(language))\"" }
        lines.append(set + ">")
        if let scheme {
            lines.append(
                "      <ContentProtection schemeIdUri=\"urn:mpeg:dash:mp4protection:2011\" value=\"\(MarkupElement.escaped(scheme))\" "
                    + "cenc:default_KID=\"\(Self.uuid(keyID))\"/>")
            if let licenseURL {
                lines.append("      <ContentProtection schemeIdUri=\"\(Self.clearKeySystem)\" value=\"ClearKey1.0\">")
                lines.append("        <dashif:Laurl>\(MarkupElement.escaped(licenseURL))</dashif:Laurl>")
                lines.append("      </ContentProtection>")
            } else {
                lines.append("      <ContentProtection schemeIdUri=\"\(Self.clearKeySystem)\" value=\"ClearKey1.0\"/>")
            }
        }
        var attributes =
            "id=\"\(MarkupElement.escaped(rep.id))\" codecs=\"\(MarkupElement.escaped(rep.codecs))\" bandwidth=\"\(rep.bandwidth)\""
        if let width = rep.width, let height = rep.height {
            attributes += " width=\"\(width)\" height=\"\(height)\""
        }
        if let rate = rep.frameRate { attributes += " frameRate=\"\(String(cFormat: "%.3f", rate))\"" }
        if let rate = rep.sampleRate { attributes += " audioSamplingRate=\"\(rate)\"" }
        lines.append("      <Representation \(attributes)>")
        if let channels = rep.channels {
            lines.append(
                "        <AudioChannelConfiguration "
                    + "schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" value=\"\(channels)\"/>"
            )
        }
        lines.append(
            "        <SegmentTemplate timescale=\"\(rep.timescale)\" presentationTimeOffset=\"\(rep.presentationTimeOffset)\" "
                + "initialization=\"\(MarkupElement.escaped(rep.initialization))\" media=\"\(MarkupElement.escaped(rep.media))\" "
                + "startNumber=\"\(rep.startNumber)\">"
        )
        lines.append("          <SegmentTimeline>")
        var index = 0
        var expected: UInt64? = nil
        while index < rep.segments.count {
            let segment = rep.segments[index]
            var repeats = 0
            while index + repeats + 1 < rep.segments.count
                && rep.segments[index + repeats + 1].duration == segment.duration
                && rep.segments[index + repeats + 1].start == segment.start + UInt64(repeats + 1) * segment.duration
            {
                repeats += 1
            }
            let start = expected == segment.start ? "" : " t=\"\(segment.start)\""
            lines.append("            <S\(start) d=\"\(segment.duration)\"\(repeats > 0 ? " r=\"\(repeats)\"" : "")/>")
            expected = segment.start + UInt64(repeats + 1) * segment.duration
            index += repeats + 1
        }
        lines.append("          </SegmentTimeline>")
        lines.append("        </SegmentTemplate>")
        lines.append("      </Representation>")
        lines.append("    </AdaptationSet>")
        return lines
    }
}
