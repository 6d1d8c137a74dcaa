import Foundation

/// One segment of a watermarked rendition as `makeABWatermarked` left it.
public struct ABSegment: Sendable {
    /// Paths inside the asset of the A and B files, and the neutral path per-session playlists use.
    public let a: String
    public let b: String
    public let neutral: String
}

/// Turns the packaged asset in `directory` into what `guard-play package --watermark ab` writes, for
/// tests of the gateway (which never parses variants): each segment `<name>.<ext>` of the media
/// playlists `playlists` (paths inside the asset) becomes `<name>.a.<ext>`, beside it `<name>.b.<ext>`
/// is the same bytes with one flipped in the middle, the playlist names the `.a` files, and
/// `watermark.json` lists the playlists. Returns each playlist's segments in order.
public func makeABWatermarked(_ directory: String, playlists: [String]) throws -> [String: [ABSegment]] {
    var result: [String: [ABSegment]] = [:]
    for playlist in playlists {
        let folder = playlist.contains("/") ? String(playlist[...playlist.lastIndex(of: "/")!]) : ""
        let text = try String(contentsOfFile: directory + "/" + playlist, encoding: .utf8)
        var lines: [String] = []
        var segments: [ABSegment] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            guard !line.isEmpty, !line.hasPrefix("#"), let dot = line.lastIndex(of: ".") else {
                lines.append(line)
                continue
            }
            let (stem, ext) = (line[..<dot], line[line.index(after: dot)...])
            let segment = ABSegment(
                a: "\(folder)\(stem).a.\(ext)", b: "\(folder)\(stem).b.\(ext)", neutral: folder + line)
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/" + folder + line)))
            try FileManager.default.moveItem(
                atPath: directory + "/" + folder + line, toPath: directory + "/" + segment.a)
            if bytes.isEmpty { bytes = [0] } else { bytes[bytes.count / 2] ^= 0xFF }
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + segment.b))
            lines.append("\(stem).a.\(ext)")
            segments.append(segment)
        }
        try lines.joined(separator: "\n").write(toFile: directory + "/" + playlist, atomically: true, encoding: .utf8)
        result[playlist] = segments
    }
    let names = playlists.map { "\"\($0)\"" }.joined(separator: ",")
    try
        #"{"version":1,"scheme":"ab-luma","key":"\#(String(repeating: "3c", count: 16))","blockSize":16,"playlists":[\#(names)]}"#
        .write(toFile: directory + "/watermark.json", atomically: true, encoding: .utf8)
    return result
}
