import FoundationEssentials
import MediaFormats

/// Rewrites a stored playlist for one playback session: key URIs point at the gateway's key endpoint
/// and carry the session token, and URIs of other playlists carry it too. Segment URIs are left alone
/// so segments stay cacheable by URL.
public struct PlaylistRewriter: Sendable {
    /// The path the key endpoint lives under, such as `/v1/keys/`.
    public let keyPathPrefix: String
    /// Key IDs by the URI the stored playlists use for them.
    public let kidsByURI: [String: String]
    /// Every key ID of the asset.
    public let kids: [String]

    /// A rewriter for an asset with the given keys.
    public init(keyPathPrefix: String, kidsByURI: [String: String], kids: [String]) {
        self.keyPathPrefix = keyPathPrefix
        self.kidsByURI = kidsByURI
        self.kids = kids
    }

    /// The playlist `text` as session `token` should see it.
    public func rewrite(_ text: String, token: String) -> String {
        var lines: [String] = []
        var nextURIIsPlaylist = false
        // Split on the byte, not the Character: "\r\n" is one Character in Swift.
        for rawLine in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            var line = String(decoding: rawLine, as: UTF8.self)
            let carriageReturn = line.hasSuffix("\r")
            if carriageReturn { line.removeLast() }
            if line.hasPrefix("#EXT-X-KEY:") || line.hasPrefix("#EXT-X-SESSION-KEY:") {
                line = rewriteKey(line, token: token)
            } else if line.hasPrefix("#EXT-X-STREAM-INF:") {
                nextURIIsPlaylist = true
            } else if line.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") || line.hasPrefix("#EXT-X-MEDIA:") {
                line = replacingURI(in: line) { Self.appendingToken(to: $0, token: token) }
            } else if !line.isEmpty && !line.hasPrefix("#") {
                if nextURIIsPlaylist || Self.isPlaylistURI(line) { line = Self.appendingToken(to: line, token: token) }
                nextURIIsPlaylist = false
            }
            lines.append(carriageReturn ? line + "\r" : line)
        }
        return lines.joined(separator: "\n")
    }

    /// The key ID a key URI stands for: an explicit mapping, a key ID named in the URI's last path
    /// component, or the asset's only key.
    public func kid(forURI uri: String) -> String? {
        if let kid = kidsByURI[uri] { return kid }
        let last = uri.split(separator: "/").last.map(String.init) ?? uri
        let stem = last.split(separator: ".").first.map(String.init) ?? last
        if kids.contains(stem) { return stem }
        if let scheme = uri.firstRange(of: "://"), kids.contains(String(uri[scheme.upperBound...])) {
            return String(uri[scheme.upperBound...])
        }
        return kids.count == 1 ? kids[0] : nil
    }

    private func rewriteKey(_ line: String, token: String) -> String {
        guard let method = AttributeList(lenientTagLine: line)["METHOD"], method != "NONE" else { return line }
        return replacingURI(in: line) { uri in
            guard let kid = kid(forURI: uri) else { return uri }
            return "\(keyPathPrefix)\(kid)?token=\(token)"
        }
    }

    /// `line` with the value of every quoted, closed `URI` attribute replaced by `transform` of it. Only
    /// an attribute named exactly `URI` is touched, never one whose name merely ends in it.
    private func replacingURI(in line: String, _ transform: (String) -> String) -> String {
        var result = line
        let uris = AttributeList(lenientTagLine: line).attributes.filter {
            $0.name == "URI" && $0.isQuoted && $0.isClosed
        }
        // From the last to the first, so the earlier ranges stay valid.
        for attribute in uris.reversed() {
            result.replaceSubrange(attribute.valueRange, with: transform(attribute.value))
        }
        return result
    }

    static func isPlaylistURI(_ uri: String) -> Bool {
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        return path.lowercased().hasSuffix(".m3u8")
    }

    static func appendingToken(to uri: String, token: String) -> String {
        uri + (uri.contains("?") ? "&" : "?") + "token=" + token
    }
}
