import FoundationEssentials
import Glibc
import MediaCore
import MediaFormats
import SystemSupport

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
        let directory = path.deletingLastPathComponent
        for (uri, isRendition) in Outline(master).named where !uri.contains("://") {
            let file = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
            let resolved = file.hasPrefix("/") ? file : directory.appendingPathComponent(file)
            // A playlist that cannot be read, or is not a playlist, gets FFmpeg's own error.
            guard let text = text(at: resolved) else { continue }
            let playlist = Outline(text)
            guard playlist.isPlaylist else { continue }
            if !playlist.named.isEmpty {
                return "the playlist '\(uri)' it names is itself a master playlist"
            }
            if isRendition && playlist.segments == 0 {
                return "its rendition playlist '\(uri)' lists no segments"
            }
        }
        return nil
    }

    /// What a playlist names and lists, read in one pass the way FFmpeg's HLS demuxer reads it: a URI
    /// line is a variant when an `EXT-X-STREAM-INF` came before it, and a segment when an `#EXTINF`
    /// did (each tag counts for the next URI line only, and independently of the other).
    struct Outline {
        /// True when the text starts with `#EXTM3U` (after a byte order mark).
        let isPlaylist: Bool
        /// The playlists it names, in order: each `EXT-X-MEDIA` rendition's URI (true) and each variant
        /// (false). Empty for a media playlist.
        private(set) var named: [(uri: String, isRendition: Bool)] = []
        /// The segments it lists.
        private(set) var segments = 0

        init(_ text: String) {
            let body = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
            let lines = body.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
                .map { $0.trimmingSpaces() }
            isPlaylist = lines.first == "#EXTM3U"
            var variantNext = false
            var segmentNext = false
            for line in lines where !line.isEmpty {
                if line.hasPrefix("#EXT-X-MEDIA:") {
                    if let uri = AttributeList(lenientTagLine: line)["URI"] { named.append((uri, true)) }
                } else if line.hasPrefix("#EXT-X-STREAM-INF:") {
                    variantNext = true
                } else if line.hasPrefix("#EXTINF:") {
                    segmentNext = true
                } else if !line.hasPrefix("#") {
                    if variantNext { named.append((line, false)) }
                    if segmentNext { segments += 1 }
                    (variantNext, segmentNext) = (false, false)
                }
            }
        }
    }

    /// The file's text when it is a readable regular file of at most `maximumPlaylistBytes`.
    private static func text(at path: String) -> String? {
        // stat(2) itself: FileManager's attribute values are a UInt or an NSNumber depending on whether
        // Foundation is loaded, and a cast that fits one silently fails on the other.
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size <= maximumPlaylistBytes,
            let data = FileManager.default.contents(atPath: path)
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
