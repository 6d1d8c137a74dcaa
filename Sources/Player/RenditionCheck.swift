import Foundation
import MediaCore

/// Looks at the renditions a local HLS master playlist names before FFmpeg opens it.
///
/// FFmpeg 5.1's HLS demuxer dereferences a null pointer (SIGSEGV) when an `EXT-X-MEDIA` rendition's
/// playlist parses with no segments: it skips setting that rendition up and uses it later. A damaged
/// or half-written package can hold such a playlist, so the player refuses it with a message instead.
/// Renditions on other hosts (`scheme://`) are left to FFmpeg, which fetches them itself.
enum RenditionCheck {
    /// The largest playlist read; a longer one is left to FFmpeg.
    static let maximumPlaylistBytes = 16 * 1024 * 1024

    /// The first local rendition playlist named by the master playlist at `path` that lists no segment,
    /// as the URI written in the master; nil when there is none, or `path` is not a local HLS playlist.
    static func emptyRendition(inMasterAt path: String) -> String? {
        guard !path.contains("://"), let master = text(at: path) else { return nil }
        let directory = (path as NSString).deletingLastPathComponent
        for line in lines(master) where line.hasPrefix("#EXT-X-MEDIA:") {
            guard let uri = attribute("URI", in: line), !uri.contains("://") else { continue }
            let file = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
            let resolved = file.hasPrefix("/") ? file : (directory as NSString).appendingPathComponent(file)
            // A rendition that cannot be read, or is not a playlist, gets FFmpeg's own error.
            guard let playlist = text(at: resolved), lines(playlist).first == "#EXTM3U" else { continue }
            if segmentCount(in: playlist) == 0 { return uri }
        }
        return nil
    }

    /// The segments a media playlist lists, counted as FFmpeg does: URI lines after an `#EXTINF` tag.
    static func segmentCount(in playlist: String) -> Int {
        var count = 0
        var announced = false
        for line in lines(playlist) where !line.isEmpty {
            if line.hasPrefix("#EXTINF:") {
                announced = true
            } else if !line.hasPrefix("#") && announced {
                count += 1
                announced = false
            }
        }
        return count
    }

    /// The quoted or plain value of attribute `name` in a tag line's attribute list.
    static func attribute(_ name: String, in line: String) -> String? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        var rest = line[line.index(after: colon)...]
        while !rest.isEmpty {
            let key = rest.prefix { $0 != "=" && $0 != "," }
            rest = rest.dropFirst(key.count)
            guard rest.first == "=" else {
                rest = rest.drop { $0 == "," }
                continue
            }
            rest = rest.dropFirst()
            let value: Substring
            if rest.first == "\"" {
                let body = rest.dropFirst()
                value = body.prefix { $0 != "\"" }
                rest = body.dropFirst(value.count).dropFirst()
            } else {
                value = rest.prefix { $0 != "," }
                rest = rest.dropFirst(value.count)
            }
            rest = rest.drop { $0 == "," }
            if key.trimmingCharacters(in: .whitespaces) == name { return String(value) }
        }
        return nil
    }

    /// The playlist's lines without line ends or a byte order mark.
    private static func lines(_ text: String) -> [String] {
        let body = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        return body.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
            .map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// The file's text when it is a readable regular file of at most `maximumPlaylistBytes`.
    private static func text(at path: String) -> String? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let size = attributes[.size] as? Int, size <= maximumPlaylistBytes,
            let data = FileManager.default.contents(atPath: path)
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
