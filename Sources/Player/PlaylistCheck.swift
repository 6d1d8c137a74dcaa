import Foundation
import MediaCore

/// Looks at the playlists a local HLS master playlist names before FFmpeg opens it, for the damage
/// FFmpeg 5.1's HLS demuxer does not survive:
/// - an `EXT-X-MEDIA` rendition whose playlist parses with no segments: the demuxer skips setting it up
///   and dereferences a null pointer later (SIGSEGV);
/// - a named playlist that is itself a master (RFC 8216 allows a master to name only media playlists):
///   the demuxer adds its variants to the list it is walking, so a playlist naming itself, or two naming
///   each other, grows the list without end, gigabytes a second, and no signal stops it.
///
/// A damaged or half-written package can hold either, so the player refuses it with a message instead.
/// Playlists on other hosts (`scheme://`) are left to FFmpeg, which fetches them itself.
enum PlaylistCheck {
    /// The largest playlist read; a longer one is left to FFmpeg.
    static let maximumPlaylistBytes = 16 * 1024 * 1024

    /// What is wrong with the playlists the local master playlist at `path` names, as a sentence; nil
    /// when nothing is, or `path` is not a local master playlist.
    static func problem(inMasterAt path: String) -> String? {
        guard !path.contains("://"), let master = text(at: path) else { return nil }
        let directory = (path as NSString).deletingLastPathComponent
        for (uri, isRendition) in namedPlaylists(in: master) where !uri.contains("://") {
            let file = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
            let resolved = file.hasPrefix("/") ? file : (directory as NSString).appendingPathComponent(file)
            // A playlist that cannot be read, or is not a playlist, gets FFmpeg's own error.
            guard let playlist = text(at: resolved), lines(playlist).first == "#EXTM3U" else { continue }
            if !namedPlaylists(in: playlist).isEmpty {
                return "the playlist '\(uri)' it names is itself a master playlist"
            }
            if isRendition && segmentCount(in: playlist) == 0 {
                return "its rendition playlist '\(uri)' lists no segments"
            }
        }
        return nil
    }

    /// The playlists a master names, in order: each `EXT-X-MEDIA` rendition's URI (true) and each URI
    /// line after `EXT-X-STREAM-INF` (false). Empty for a media playlist.
    static func namedPlaylists(in playlist: String) -> [(uri: String, isRendition: Bool)] {
        var named: [(String, Bool)] = []
        var variantNext = false
        for line in lines(playlist) where !line.isEmpty {
            if line.hasPrefix("#EXT-X-MEDIA:") {
                if let uri = attribute("URI", in: line) { named.append((uri, true)) }
            } else if line.hasPrefix("#EXT-X-STREAM-INF:") {
                variantNext = true
            } else if !line.hasPrefix("#") && variantNext {
                named.append((line, false))
                variantNext = false
            }
        }
        return named
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
