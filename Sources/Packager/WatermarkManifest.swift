import Crypto
import FoundationEssentials
import MediaFormats
import SystemSupport

/// `watermark.json` at the root of a `--watermark ab` output: what a gateway needs to serve variants
/// and a detector to read them. `{"version":1,"scheme":"ab-luma","key":HEX,"blockSize":16,
/// "playlists":[…],"segmentDuration":6}`: `playlists` are the media playlists whose segments come in
/// pairs (`NAME_00000.a.ts` beside `NAME_00000.b.ts`; the playlist lists the `.a` names), and
/// `segmentDuration` the target the segments were cut to, which the verifier needs to encode the
/// variants again.
public struct WatermarkManifest: Sendable, Equatable {
    /// Its file name in the output directory.
    public static let fileName = "watermark.json"
    /// The scheme's name in the file.
    public static let scheme = "ab-luma"

    /// The pattern's 16-byte key.
    public var key: [UInt8]
    /// Pixels on a side of a pattern block.
    public var blockSize: Int
    /// Media playlists (relative URIs) whose segments have variants.
    public var playlists: [String]
    /// The target segment duration in seconds.
    public var segmentDuration: Double

    /// A manifest with these fields.
    public init(key: [UInt8], blockSize: Int, playlists: [String], segmentDuration: Double) {
        self.key = key
        self.blockSize = blockSize
        self.playlists = playlists
        self.segmentDuration = segmentDuration
    }

    /// Reads the manifest in `bytes`; `name` is the file for messages.
    public init(parsing bytes: [UInt8], name: String = WatermarkManifest.fileName) throws(PackagingError) {
        guard let object = (try? JSON.parse(bytes))?.object else {
            throw PackagingError(.inputCorrupt, "\(name) is not a JSON object")
        }
        guard object["version"]?.int == 1, object["scheme"]?.string == WatermarkManifest.scheme else {
            throw PackagingError(.inputCorrupt, "\(name) is not version 1 of the \(WatermarkManifest.scheme) scheme")
        }
        guard let hex = object["key"]?.string, let key = [UInt8](hex: hex), key.count == 16,
            let blockSize = object["blockSize"]?.int, blockSize == WatermarkPattern.blockSize,
            let playlists = object["playlists"]?.strings, !playlists.isEmpty,
            let duration = object["segmentDuration"]?.number, duration.isFinite, duration >= 1, duration <= 60
        else {
            throw PackagingError(
                .inputCorrupt,
                "\(name) needs a 32-hex-digit key, blockSize \(WatermarkPattern.blockSize), playlists and a "
                    + "segmentDuration of 1 to 60 s")
        }
        self.init(key: key, blockSize: blockSize, playlists: playlists, segmentDuration: duration)
    }

    /// The manifest of the output in `directory`, or nil when it has none.
    static func load(from directory: String) throws(PackagingError) -> WatermarkManifest? {
        let path = directory + "/" + fileName
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let bytes = VerificationRun.readFile(path, limit: 64 << 10) else {
            throw PackagingError(.inputCorrupt, "\(fileName) is unreadable or over 64 KiB")
        }
        return try WatermarkManifest(parsing: bytes)
    }

    /// What `verify` notes about a watermarked output.
    var verificationNote: String {
        "watermarked (\(WatermarkManifest.scheme)): \(playlists.joined(separator: ", ")) checked as variant A and "
            + "variant B, each against a deterministic libx264 re-encode of the marked source"
    }

    /// The pattern and segment duration to read a source with, as the packager did.
    var source: (pattern: WatermarkPattern, segmentDuration: Double) {
        get throws(PackagingError) { (try WatermarkPattern(key: key), segmentDuration) }
    }

    /// `playlist` with every segment's URI turned into its B variant's; a URI that names no A variant
    /// is left as it is and reported to `problem`.
    static func variantB(of playlist: ParsedMediaPlaylist, name: String, problem: (String) -> Void)
        -> ParsedMediaPlaylist
    {
        var other = playlist
        for index in other.segments.indices {
            guard let uri = variantURI(other.segments[index].uri, .b) else {
                problem("\(name): segment \(other.segments[index].uri) is not an A variant (NAME_00000.a.EXT)")
                continue
            }
            other.segments[index].uri = uri
        }
        return other
    }

    /// The file's text, its keys in the documented order.
    public func rendered() -> String {
        let names = playlists.map { "\"\($0)\"" }.joined(separator: ",")
        let duration =
            segmentDuration.rounded() == segmentDuration ? String(Int(segmentDuration)) : "\(segmentDuration)"
        return "{\"version\":1,\"scheme\":\"\(WatermarkManifest.scheme)\",\"key\":\"\(key.hexString)\","
            + "\"blockSize\":\(blockSize),\"playlists\":[\(names)],\"segmentDuration\":\(duration)}\n"
    }

    /// The URI of variant `variant` of the segment whose playlist URI (the A variant's) is `uri`, or nil
    /// when `uri` names no A variant.
    public static func variantURI(_ uri: String, _ variant: WatermarkVariant) -> String? {
        guard let dot = uri.lastIndex(of: "."), uri[..<dot].hasSuffix(".a") else { return nil }
        let stem = uri[..<uri.index(dot, offsetBy: -2)]
        return stem + "." + variant.rawValue + uri[dot...]
    }
}
