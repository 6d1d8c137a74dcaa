import Foundation

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

    /// The line, tag included.
    var text: String {
        var attributes = ["METHOD=\(method)"]
        if let uri { attributes.append("URI=\"\(uri)\"") }
        if let iv { attributes.append("IV=0x\(iv.hexString.uppercased())") }
        if let keyFormat { attributes.append("KEYFORMAT=\"\(keyFormat)\"") }
        if let keyFormatVersions { attributes.append("KEYFORMATVERSIONS=\"\(keyFormatVersions)\"") }
        return "#EXT-X-KEY:" + attributes.joined(separator: ",")
    }

    /// The lowest EXT-X-VERSION this line allows (RFC 8216 §7): 5 for SAMPLE-AES(-CTR) or a KEYFORMAT,
    /// 2 for an IV.
    var minimumVersion: Int {
        if method.hasPrefix("SAMPLE-AES") || keyFormat != nil || keyFormatVersions != nil { return 5 }
        return iv != nil ? 2 : 1
    }
}

/// Formats a duration as EXTINF writes it: six decimals.
func formatDuration(_ seconds: Double) -> String { String(format: "%.6f", seconds) }

/// Rounds a duration to the nearest integer, as EXT-X-TARGETDURATION is compared (halves round up).
func roundedDuration(_ seconds: Double) -> Int { clampedInt((seconds + 0.5).rounded(.down)) }

/// `value` without its fraction, clamped to `Int`'s range (NaN becomes 0): for numbers derived from
/// files, whose conversion must never trap.
func clampedInt(_ value: Double) -> Int {
    if value.isNaN { return 0 }
    if value >= Double(Int.max) { return Int.max }  // Double(Int.max) is 2^63, one more than Int.max
    if value <= Double(Int.min) { return Int.min }
    return Int(value)
}

/// A media playlist as the packager writes it (VOD, media sequence 0, independent segments).
struct MediaPlaylist {
    /// One entry: a segment, or for I-frame playlists a byte range of one.
    struct Entry {
        /// The EXTINF duration in seconds.
        var duration: Double
        /// The segment file name, relative to the playlist.
        var uri: String
        /// The byte range `length@offset`, for I-frame playlists.
        var byteRange: (length: Int, offset: Int)?
        /// The key line to write before this entry, when it changes.
        var key: KeyLine?
    }

    /// The entries in order.
    var entries: [Entry] = []
    /// True for an `EXT-X-I-FRAMES-ONLY` playlist.
    var iFramesOnly = false
    /// The URI of the media initialization section (`EXT-X-MAP`, fMP4), written before every key line
    /// so that it stays clear.
    var map: String?

    /// The lowest EXT-X-VERSION the playlist's features need: 3 for decimal EXTINF, 4 for byte ranges
    /// and I-frames only, 5 for SAMPLE-AES and KEYFORMAT, 6 for EXT-X-MAP.
    var minimumVersion: Int {
        var version = 3
        if iFramesOnly || entries.contains(where: { $0.byteRange != nil }) { version = 4 }
        for entry in entries { if let key = entry.key { version = max(version, key.minimumVersion) } }
        // RFC 8216 §7: EXT-X-MAP needs 5 in an I-frames-only playlist, 6 in any other.
        if map != nil { version = max(version, iFramesOnly ? 5 : 6) }
        return version
    }

    /// The longest EXTINF rounded to the nearest integer.
    var longestRoundedDuration: Int {
        entries.map { roundedDuration(Double(formatDuration($0.duration)) ?? $0.duration) }.max() ?? 0
    }

    /// The playlist text, with `targetDuration` (at least every rounded EXTINF).
    func render(targetDuration: Int) -> String {
        precondition(targetDuration >= longestRoundedDuration, "TARGETDURATION below a rounded EXTINF")
        var lines = [
            "#EXTM3U", "#EXT-X-VERSION:\(minimumVersion)", "#EXT-X-TARGETDURATION:\(targetDuration)",
            "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS",
        ]
        if iFramesOnly { lines.append("#EXT-X-I-FRAMES-ONLY") }
        if let map { lines.append("#EXT-X-MAP:URI=\"\(map)\"") }
        for entry in entries {
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
struct MasterPlaylist {
    /// An alternative audio rendition (`EXT-X-MEDIA:TYPE=AUDIO`).
    struct AudioRendition {
        var groupID: String
        var name: String
        var language: String?
        var isDefault: Bool
        var channels: Int
        var uri: String
    }

    /// A variant stream (`EXT-X-STREAM-INF`).
    struct Variant {
        var bandwidth: Int
        var averageBandwidth: Int
        var codecs: [String]
        var resolution: (width: Int, height: Int)?
        var frameRate: Double?
        var audioGroup: String?
        var uri: String
    }

    /// An I-frame variant (`EXT-X-I-FRAME-STREAM-INF`).
    struct IFrameVariant {
        var bandwidth: Int
        var averageBandwidth: Int
        var codecs: [String]
        var resolution: (width: Int, height: Int)
        var uri: String
    }

    var audioRenditions: [AudioRendition] = []
    var variants: [Variant] = []
    var iFrameVariants: [IFrameVariant] = []

    /// The playlist text. It needs no EXT-X-VERSION: nothing in it is newer than version 1.
    func render() -> String {
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
            if let rate = variant.frameRate { attributes.append("FRAME-RATE=\(String(format: "%.3f", rate))") }
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
