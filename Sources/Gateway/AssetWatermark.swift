import FoundationEssentials
import Glibc
import MediaFormats
import SystemSupport

/// One watermarked segment: where it sits in its media playlist and its two variant files.
struct WatermarkedSegment: Sendable {
    /// The media playlist's path inside the asset.
    let rendition: String
    /// Its position in that playlist, from 0.
    let index: Int
    /// The files of variant A and B.
    let a: ServedFile
    let b: ServedFile

    func file(_ variant: WatermarkVariant) -> ServedFile { variant == .a ? a : b }
}

/// What a copy's length says about a watermarked asset: how many segments spell one codeword and how
/// long that takes to watch.
public struct WatermarkSummary: Sendable, Equatable {
    /// Coded bits per session codeword (`WatermarkCode.length`).
    public let codewordBits: Int
    /// The watermarked playlists' mean segment duration.
    public let segmentSeconds: Double
    /// `codewordBits` × `segmentSeconds`: viewing that carries every bit of a session's codeword once.
    public var identifiesAfterSeconds: Double { Double(codewordBits) * segmentSeconds }
}

/// An asset's A/B watermark, from the `watermark.json` its packager wrote at the asset's root: the media
/// playlists whose segments have two variants, each segment under the neutral path the per-session
/// playlists name it by (`video_00000.a.ts` becomes `video_00000.ts`), and every variant file, which
/// is only ever served through a session's variant path.
struct AssetWatermark: Sendable {
    /// The media playlists with variants (paths inside the asset).
    let renditions: Set<String>
    /// Segments by their neutral path inside the asset.
    let segments: [String: WatermarkedSegment]
    /// Neutral paths by the path of the A file, which the stored playlists name.
    let neutralByA: [String: String]
    /// The paths of all variant files.
    let variantFiles: Set<String>
    /// What a session's codeword takes to watch.
    let summary: WatermarkSummary

    /// The manifest's name at the asset's root.
    static let manifestName = "watermark.json"
    /// The largest manifest read.
    static let maxManifestBytes = 64 * 1024

    /// The watermark of the asset in `directory`, nil when it has no manifest. A manifest that cannot
    /// be read, names a playlist the asset lacks, or a segment without both variant files is refused,
    /// so the asset is not served rather than served unmarked.
    static func load(
        directory: String, files: [String: ServedFile], playlists: [String: String]
    ) throws(GatewayError) -> AssetWatermark? {
        let path = directory + "/" + manifestName
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        func invalid(_ detail: String) -> GatewayError {
            GatewayError(.invalid, code: "watermark-manifest-invalid", detail: "\(manifestName): \(detail)")
        }
        guard info.st_mode & S_IFMT == S_IFREG, info.st_size <= maxManifestBytes,
            let data = FileManager.default.contents(atPath: path),
            let object = (try? JSON.parse([UInt8](data)))?.object
        else { throw invalid("not a JSON object of at most \(maxManifestBytes) bytes") }
        guard object["version"]?.int == 1 else { throw invalid("version must be 1") }
        guard let names = object["playlists"]?.strings, !names.isEmpty, names.count <= 64 else {
            throw invalid("playlists must list 1 to 64 media playlists")
        }
        var segments: [String: WatermarkedSegment] = [:]
        var neutralByA: [String: String] = [:]
        var variantFiles = Set<String>()
        var durations: [Double] = []
        for rendition in names {
            guard let text = playlists[rendition] else { throw invalid("no playlist '\(rendition)' in the asset") }
            let parsed: ParsedMediaPlaylist
            do { parsed = try ParsedMediaPlaylist(text, name: rendition) } catch {
                throw invalid("\(rendition): \(error)")
            }
            guard !parsed.segments.isEmpty, parsed.segments.allSatisfy({ $0.byteRange == nil }) else {
                throw invalid("\(rendition) must list whole segments")
            }
            let folder = rendition.contains("/") ? String(rendition[...rendition.lastIndex(of: "/")!]) : ""
            for (index, segment) in parsed.segments.enumerated() {
                guard AssetCatalog.isServableName(segment.uri), let stem = variantStem(segment.uri) else {
                    throw invalid("\(rendition): segment '\(segment.uri)' is not a '<name>.a.<ext>' file beside it")
                }
                let neutral = folder + stem.name + "." + stem.extension
                let aPath = folder + segment.uri
                let bPath = folder + stem.name + ".b." + stem.extension
                guard let a = files[aPath], let b = files[bPath] else {
                    throw invalid("\(rendition): segment \(index) lacks \(files[aPath] == nil ? aPath : bPath)")
                }
                guard segments[neutral] == nil else { throw invalid("\(neutral) is listed twice") }
                segments[neutral] = WatermarkedSegment(rendition: rendition, index: index, a: a, b: b)
                neutralByA[aPath] = neutral
                variantFiles.formUnion([aPath, bPath])
                durations.append(segment.duration)
            }
        }
        let mean = durations.reduce(0, +) / Double(durations.count)
        return AssetWatermark(
            renditions: Set(names), segments: segments, neutralByA: neutralByA, variantFiles: variantFiles,
            summary: WatermarkSummary(
                codewordBits: WatermarkCode.length, segmentSeconds: (mean * 1000).rounded() / 1000))
    }

    /// `video_00000` and `ts` for `video_00000.a.ts`, nil for a name not of that shape.
    static func variantStem(_ name: String) -> (name: String, extension: String)? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[parts.count - 2] == "a", !parts.last!.isEmpty else { return nil }
        return (parts.dropLast(2).joined(separator: "."), String(parts.last!))
    }
}
