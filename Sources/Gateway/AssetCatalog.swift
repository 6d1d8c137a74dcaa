import FoundationEssentials
import Glibc
import Store
import Synchronization

/// One file an asset serves, found by scanning its directory: the request's path is only ever a key
/// into this index, never joined to a directory.
public struct ServedFile: Sendable, Equatable {
    /// The path inside the asset, such as `video/seg3.ts`.
    public let name: String
    /// The absolute path on disk.
    public let path: String
    /// Its size in bytes.
    public let size: UInt64
    /// Its media type.
    public let contentType: String
    /// True for playlists, which are rewritten per session and never cached.
    public var isPlaylist: Bool { contentType == ServedFile.playlistType }

    static let playlistType = "application/vnd.apple.mpegurl"
}

/// A key as the key path needs it.
struct ServedKey: Sendable {
    let assetID: String
    let key: [UInt8]
}

/// An asset ready to serve: its record, its file index, its playlists' text and how its key URIs map
/// to key IDs.
struct ServedAsset: Sendable {
    let record: AssetRecord
    let files: [String: ServedFile]
    let playlists: [String: String]
    let master: String?
    let kidsByURI: [String: String]
    let kids: [String]
    /// The A/B watermark, when the asset has one.
    var watermark: AssetWatermark? = nil
}

/// The assets the gateway serves, indexed in memory, with their content keys unwrapped once at load.
final class AssetCatalog: Sendable {
    struct Contents {
        var assets: [String: ServedAsset] = [:]
        var keys: [String: ServedKey] = [:]
    }

    /// Media types by file extension; anything else in an asset directory (key files included) is
    /// never served.
    static let mediaTypes: [String: String] = [
        "m3u8": ServedFile.playlistType, "ts": "video/mp2t", "aac": "audio/aac", "ac3": "audio/ac3",
        "ec3": "audio/eac3", "m4s": "video/iso.segment", "mp4": "video/mp4", "m4a": "audio/mp4", "vtt": "text/vtt",
        "mpd": "application/dash+xml",
    ]
    /// The largest playlist held in memory.
    static let maxPlaylistBytes = 4 * 1024 * 1024

    private let contents = Mutex(Contents())

    /// Replaces the catalog's entry for `asset` with a fresh scan of its directory.
    func install(_ asset: AssetRecord, keys: [ContentKeyRecord]) throws(GatewayError) {
        let served = try Self.scan(asset, keys: keys)
        contents.withLock { contents in
            contents.assets[asset.id] = served
            for key in keys { contents.keys[key.kid] = ServedKey(assetID: key.assetID, key: key.key) }
        }
    }

    /// Adds a key without rescanning (a job's key, before its asset exists).
    func addKey(_ key: ContentKeyRecord) {
        contents.withLock { $0.keys[key.kid] = ServedKey(assetID: key.assetID, key: key.key) }
    }

    /// Changes an asset's key policy in memory.
    func setPolicy(asset id: String, denyKeysWhileCapturing: Bool) {
        contents.withLock { contents in
            guard let served = contents.assets[id] else { return }
            var record = served.record
            record.denyKeysWhileCapturing = denyKeysWhileCapturing
            contents.assets[id] = ServedAsset(
                record: record, files: served.files, playlists: served.playlists, master: served.master,
                kidsByURI: served.kidsByURI, kids: served.kids, watermark: served.watermark)
        }
    }

    func asset(_ id: String) -> ServedAsset? { contents.withLock { $0.assets[id] } }

    func key(_ kid: String) -> ServedKey? { contents.withLock { $0.keys[kid] } }

    /// The asset's policy and the key, in one look.
    func keyAndPolicy(_ kid: String) -> (key: ServedKey, denyWhileCapturing: Bool)? {
        contents.withLock { contents in
            guard let key = contents.keys[kid] else { return nil }
            return (key, contents.assets[key.assetID]?.record.denyKeysWhileCapturing ?? false)
        }
    }

    var assetIDs: [String] { contents.withLock { $0.assets.keys.sorted() } }

    /// Indexes the files under the asset's directory (two levels at most, no symbolic links, names in
    /// a strict grammar, known media types only) and reads its playlists.
    static func scan(_ asset: AssetRecord, keys: [ContentKeyRecord]) throws(GatewayError) -> ServedAsset {
        var files: [String: ServedFile] = [:]
        var playlists: [String: String] = [:]
        func visit(_ directory: String, prefix: String, depth: Int) {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
            for name in names where isServableName(name) {
                let path = directory + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                let relative = prefix + name
                if info.st_mode & S_IFMT == S_IFDIR {
                    if depth < 1 && Identifier.isValid(name) { visit(path, prefix: relative + "/", depth: depth + 1) }
                    continue
                }
                guard info.st_mode & S_IFMT == S_IFREG, let type = mediaTypes[fileExtension(name)] else { continue }
                let file = ServedFile(name: relative, path: path, size: UInt64(info.st_size), contentType: type)
                if file.isPlaylist {
                    guard file.size <= maxPlaylistBytes, let data = FileManager.default.contents(atPath: path),
                        let text = String(data: data, encoding: .utf8)
                    else { continue }
                    playlists[relative] = text
                }
                files[relative] = file
            }
        }
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: asset.directory, isDirectory: &isDirectory), isDirectory
        else {
            throw GatewayError(
                .invalid, code: "asset-directory-missing", detail: "The asset's directory does not exist.")
        }
        visit(asset.directory, prefix: "", depth: 0)
        let topLevel = playlists.keys.filter { !$0.contains("/") }.sorted()
        let master = topLevel.contains("master.m3u8") ? "master.m3u8" : topLevel.first
        var kidsByURI: [String: String] = [:]
        for key in keys { if let uri = key.uri { kidsByURI[uri] = key.kid } }
        return ServedAsset(
            record: asset, files: files, playlists: playlists, master: master, kidsByURI: kidsByURI,
            kids: keys.map(\.kid).sorted(),
            watermark: try AssetWatermark.load(directory: asset.directory, files: files, playlists: playlists))
    }

    /// A file or directory name the catalog will index: `[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}`.
    static func isServableName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 128, Identifier.isIDByte(bytes[0]) else { return false }
        return bytes.allSatisfy { Identifier.isIDByte($0) || $0 == UInt8(ascii: ".") }
    }

    static func fileExtension(_ name: String) -> String {
        guard let dot = name.lastIndex(of: ".") else { return "" }
        return String(name[name.index(after: dot)...]).lowercased()
    }
}
