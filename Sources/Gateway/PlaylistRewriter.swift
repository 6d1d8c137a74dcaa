import Foundation

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
        if let scheme = uri.range(of: "://"), kids.contains(String(uri[scheme.upperBound...])) {
            return String(uri[scheme.upperBound...])
        }
        return kids.count == 1 ? kids[0] : nil
    }

    private func rewriteKey(_ line: String, token: String) -> String {
        guard let method = Self.attribute("METHOD", in: line), method != "NONE" else { return line }
        return replacingURI(in: line) { uri in
            guard let kid = kid(forURI: uri) else { return uri }
            return "\(keyPathPrefix)\(kid)?token=\(token)"
        }
    }

    private func replacingURI(in line: String, _ transform: (String) -> String) -> String {
        guard let start = line.range(of: "URI=\""),
            let end = line[start.upperBound...].firstIndex(of: "\"")
        else { return line }
        let uri = String(line[start.upperBound..<end])
        return String(line[..<start.upperBound]) + transform(uri) + String(line[end...])
    }

    /// The value of attribute `name` in an attribute list (quotes removed), or nil.
    static func attribute(_ name: String, in line: String) -> String? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        var rest = line[line.index(after: colon)...]
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let key = rest[..<equals].trimmingCharacters(in: .whitespaces)
            var valueStart = rest.index(after: equals)
            let value: Substring
            if valueStart < rest.endIndex && rest[valueStart] == "\"" {
                valueStart = rest.index(after: valueStart)
                let close = rest[valueStart...].firstIndex(of: "\"") ?? rest.endIndex
                value = rest[valueStart..<close]
                rest = close < rest.endIndex ? rest[rest.index(after: close)...] : rest[rest.endIndex...]
            } else {
                let comma = rest[valueStart...].firstIndex(of: ",") ?? rest.endIndex
                value = rest[valueStart..<comma]
                rest = rest[comma...]
            }
            if key == name { return String(value) }
            if let comma = rest.firstIndex(of: ",") { rest = rest[rest.index(after: comma)...] } else { return nil }
        }
        return nil
    }

    static func isPlaylistURI(_ uri: String) -> Bool {
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        return path.lowercased().hasSuffix(".m3u8")
    }

    static func appendingToken(to uri: String, token: String) -> String {
        uri + (uri.contains("?") ? "&" : "?") + "token=" + token
    }
}
