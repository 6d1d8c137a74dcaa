import FoundationEssentials
import SystemSupport

/// An `EXT-X-KEY` line: how the following segments are encrypted and where the key is.
public struct KeyLine: Sendable, Equatable {
    /// `SAMPLE-AES`, `AES-128` or `NONE`.
    public var method: String
    /// The key URI, absent for `NONE`.
    public var uri: String?
    /// The explicit IV, written as `0x` and 32 hex digits.
    public var iv: [UInt8]?
    /// The KEYFORMAT, absent for the default `identity`.
    public var keyFormat: String?
    /// The KEYFORMATVERSIONS, absent for the default `1`.
    public var keyFormatVersions: String?

    /// Creates the value from its parts.
    public init(
        method: String, uri: String? = nil, iv: [UInt8]? = nil, keyFormat: String? = nil,
        keyFormatVersions: String? = nil
    ) {
        self.method = method
        self.uri = uri
        self.iv = iv
        self.keyFormat = keyFormat
        self.keyFormatVersions = keyFormatVersions
    }

    /// The line, tag included.
    public var text: String {
        var attributes = ["METHOD=\(method)"]
        if let uri { attributes.append("URI=\"\(uri)\"") }
        if let iv { attributes.append("IV=0x\(iv.hexString.uppercased())") }
        if let keyFormat { attributes.append("KEYFORMAT=\"\(keyFormat)\"") }
        if let keyFormatVersions { attributes.append("KEYFORMATVERSIONS=\"\(keyFormatVersions)\"") }
        return "#EXT-X-KEY:" + attributes.joined(separator: ",")
    }

    /// The lowest EXT-X-VERSION this line allows (RFC 8216 §7): 5 for SAMPLE-AES(-CTR) or a KEYFORMAT,
    /// 2 for an IV.
    public var minimumVersion: Int {
        if method.hasPrefix("SAMPLE-AES") || keyFormat != nil || keyFormatVersions != nil { return 5 }
        return iv != nil ? 2 : 1
    }
}

/// Formats a duration as EXTINF writes it: six decimals.
public func formatDuration(_ seconds: Double) -> String { String(cFormat: "%.6f", seconds) }

/// Rounds a duration to the nearest integer, as EXT-X-TARGETDURATION is compared (halves round up).
public func roundedDuration(_ seconds: Double) -> Int { clampedInt((seconds + 0.5).rounded(.down)) }

/// `value` without its fraction, clamped to `Int`'s range (NaN becomes 0): for numbers derived from
/// files, whose conversion must never trap.
public func clampedInt(_ value: Double) -> Int {
    if value.isNaN { return 0 }
    if value >= Double(Int.max) { return Int.max }  // Double(Int.max) is 2^63, one more than Int.max
    if value <= Double(Int.min) { return Int.min }
    return Int(value)
}

/// A media playlist as the packager writes it (VOD, media sequence 0, independent segments).
public struct MediaPlaylist: Sendable {
    /// One entry: a segment, or for I-frame playlists a byte range of one.
    public struct Entry: Sendable {
        /// The EXTINF duration in seconds.
        public var duration: Double
        /// The segment file name, relative to the playlist.
        public var uri: String
        /// The byte range `length@offset`, for I-frame playlists.
        public var byteRange: (length: Int, offset: Int)?
        /// The key line to write before this entry, when it changes.
        public var key: KeyLine?
        /// A new EXT-X-MAP to write before this entry's key line, where a key period starts in fMP4
        /// (the playlist's first is `MediaPlaylist.map`).
        public var map: String?

        /// Creates the value from its parts.
        public init(
            duration: Double, uri: String, byteRange: (length: Int, offset: Int)? = nil, key: KeyLine? = nil,
            map: String? = nil
        ) {
            self.duration = duration
            self.uri = uri
            self.byteRange = byteRange
            self.key = key
            self.map = map
        }
    }

    /// The entries in order.
    public var entries: [Entry] = []

    /// Creates the value from its parts.
    public init(entries: [Entry] = [], iFramesOnly: Bool = false) {
        self.entries = entries
        self.iFramesOnly = iFramesOnly
    }
    /// True for an `EXT-X-I-FRAMES-ONLY` playlist.
    public var iFramesOnly = false
    /// The URI of the media initialization section (`EXT-X-MAP`, fMP4), written before every key line
    /// so that it stays clear.
    public var map: String?

    /// The lowest EXT-X-VERSION the playlist's features need: 3 for decimal EXTINF, 4 for byte ranges
    /// and I-frames only, 5 for SAMPLE-AES and KEYFORMAT, 6 for EXT-X-MAP.
    public var minimumVersion: Int {
        var version = 3
        if iFramesOnly || entries.contains(where: { $0.byteRange != nil }) { version = 4 }
        for entry in entries { if let key = entry.key { version = max(version, key.minimumVersion) } }
        // RFC 8216 §7: EXT-X-MAP needs 5 in an I-frames-only playlist, 6 in any other.
        if map != nil { version = max(version, iFramesOnly ? 5 : 6) }
        return version
    }

    /// The longest EXTINF rounded to the nearest integer.
    public var longestRoundedDuration: Int {
        entries.map { roundedDuration(Double(formatDuration($0.duration)) ?? $0.duration) }.max() ?? 0
    }

    /// The playlist text, with `targetDuration` (at least every rounded EXTINF).
    public func render(targetDuration: Int) -> String {
        precondition(targetDuration >= longestRoundedDuration, "TARGETDURATION below a rounded EXTINF")
        var lines = [
            "#EXTM3U", "#EXT-X-VERSION:\(minimumVersion)", "#EXT-X-TARGETDURATION:\(targetDuration)",
            "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS",
        ]
        if iFramesOnly { lines.append("#EXT-X-I-FRAMES-ONLY") }
        if let map { lines.append("#EXT-X-MAP:URI=\"\(map)\"") }
        for entry in entries {
            if let map = entry.map { lines.append("#EXT-X-MAP:URI=\"\(map)\"") }
            if let key = entry.key { lines.append(key.text) }
            lines.append("#EXTINF:\(formatDuration(entry.duration)),")
            if let range = entry.byteRange { lines.append("#EXT-X-BYTERANGE:\(range.length)@\(range.offset)") }
            lines.append(entry.uri)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// A master playlist as the packager writes it.
public struct MasterPlaylist: Sendable {
    /// An alternative audio rendition (`EXT-X-MEDIA:TYPE=AUDIO`).
    public struct AudioRendition: Sendable {
        /// The GROUP-ID the variants name in AUDIO.
        public var groupID: String
        /// The NAME shown to the viewer.
        public var name: String
        /// The LANGUAGE tag (RFC 5646), if known.
        public var language: String?
        /// True for DEFAULT=YES.
        public var isDefault: Bool
        /// The CHANNELS count.
        public var channels: Int
        /// The media playlist URI, relative to the master.
        public var uri: String

        /// Creates the value from its parts.
        public init(groupID: String, name: String, language: String? = nil, isDefault: Bool, channels: Int, uri: String)
        {
            self.groupID = groupID
            self.name = name
            self.language = language
            self.isDefault = isDefault
            self.channels = channels
            self.uri = uri
        }
    }

    /// A variant stream (`EXT-X-STREAM-INF`).
    public struct Variant: Sendable {
        /// BANDWIDTH: the peak bit rate, bits per second.
        public var bandwidth: Int
        /// AVERAGE-BANDWIDTH, bits per second.
        public var averageBandwidth: Int
        /// The CODECS entries (RFC 6381).
        public var codecs: [String]
        /// RESOLUTION, in pixels.
        public var resolution: (width: Int, height: Int)?
        /// FRAME-RATE, frames per second.
        public var frameRate: Double?
        /// The AUDIO group ID, when audio is a rendition.
        public var audioGroup: String?
        /// The media playlist URI, relative to the master.
        public var uri: String

        /// Creates the value from its parts.
        public init(
            bandwidth: Int, averageBandwidth: Int, codecs: [String], resolution: (width: Int, height: Int)? = nil,
            frameRate: Double? = nil, audioGroup: String? = nil, uri: String
        ) {
            self.bandwidth = bandwidth
            self.averageBandwidth = averageBandwidth
            self.codecs = codecs
            self.resolution = resolution
            self.frameRate = frameRate
            self.audioGroup = audioGroup
            self.uri = uri
        }
    }

    /// An I-frame variant (`EXT-X-I-FRAME-STREAM-INF`).
    public struct IFrameVariant: Sendable {
        /// BANDWIDTH: the peak bit rate, bits per second.
        public var bandwidth: Int
        /// AVERAGE-BANDWIDTH, bits per second.
        public var averageBandwidth: Int
        /// The CODECS entries (RFC 6381).
        public var codecs: [String]
        /// RESOLUTION, in pixels.
        public var resolution: (width: Int, height: Int)
        /// The media playlist URI, relative to the master.
        public var uri: String

        /// Creates the value from its parts.
        public init(
            bandwidth: Int, averageBandwidth: Int, codecs: [String], resolution: (width: Int, height: Int), uri: String
        ) {
            self.bandwidth = bandwidth
            self.averageBandwidth = averageBandwidth
            self.codecs = codecs
            self.resolution = resolution
            self.uri = uri
        }
    }

    /// The EXT-X-MEDIA audio renditions.
    public var audioRenditions: [AudioRendition] = []
    /// The EXT-X-STREAM-INF variants.
    public var variants: [Variant] = []
    /// The EXT-X-I-FRAME-STREAM-INF variants.
    public var iFrameVariants: [IFrameVariant] = []

    /// Creates the value from its parts.
    public init(audioRenditions: [AudioRendition] = [], variants: [Variant] = [], iFrameVariants: [IFrameVariant] = [])
    {
        self.audioRenditions = audioRenditions
        self.variants = variants
        self.iFrameVariants = iFrameVariants
    }

    /// The playlist text. It needs no EXT-X-VERSION: nothing in it is newer than version 1.
    public func render() -> String {
        var lines = ["#EXTM3U", "#EXT-X-INDEPENDENT-SEGMENTS"]
        for rendition in audioRenditions {
            var attributes = ["TYPE=AUDIO", "GROUP-ID=\"\(rendition.groupID)\""]
            if let language = rendition.language { attributes.append("LANGUAGE=\"\(language)\"") }
            attributes.append("NAME=\"\(rendition.name)\"")
            attributes.append("DEFAULT=\(rendition.isDefault ? "YES" : "NO")")
            attributes.append("AUTOSELECT=YES")
            attributes.append("CHANNELS=\"\(rendition.channels)\"")
            attributes.append("URI=\"\(rendition.uri)\"")
            lines.append("#EXT-X-MEDIA:" + attributes.joined(separator: ","))
        }
        for variant in variants {
            var attributes = [
                "BANDWIDTH=\(variant.bandwidth)", "AVERAGE-BANDWIDTH=\(variant.averageBandwidth)",
                "CODECS=\"\(variant.codecs.joined(separator: ","))\"",
            ]
            if let resolution = variant.resolution {
                attributes.append("RESOLUTION=\(resolution.width)x\(resolution.height)")
            }
            if let rate = variant.frameRate { attributes.append("FRAME-RATE=\(String(cFormat: "%.3f", rate))") }
            if let group = variant.audioGroup { attributes.append("AUDIO=\"\(group)\"") }
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(variant.uri)
        }
        for variant in iFrameVariants {
            let attributes = [
                "BANDWIDTH=\(variant.bandwidth)", "AVERAGE-BANDWIDTH=\(variant.averageBandwidth)",
                "CODECS=\"\(variant.codecs.joined(separator: ","))\"",
                "RESOLUTION=\(variant.resolution.width)x\(variant.resolution.height)", "URI=\"\(variant.uri)\"",
            ]
            lines.append("#EXT-X-I-FRAME-STREAM-INF:" + attributes.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
