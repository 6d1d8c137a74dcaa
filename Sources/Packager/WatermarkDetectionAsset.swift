import Crypto
import FoundationEssentials
import Glibc
import MediaFormats

/// The watermarked video rendition of a packaged asset as the detector reads it: its segments in
/// playlist order (segment `index` is the one the gateway's codeword positions count), where each starts
/// on the playlist's timeline, and both variant files, decrypted on the way to the decoder when the
/// package is SAMPLE-AES. Only the MPEG-TS layout is read; an fMP4 or AES-128 package is refused.
public struct WatermarkDetectionAsset: Sendable {
    /// One segment and its two variant files.
    public struct Segment: Sendable {
        /// Its position in the playlist, from 0.
        public let index: Int
        /// Seconds from the playlist's start, by the EXTINF durations.
        public let start: Double
        /// Its EXTINF duration.
        public let duration: Double
        /// The variant files.
        let a: String
        let b: String
        /// The SAMPLE-AES content key and IV, nil for a clear segment.
        let key: [UInt8]?
        let iv: [UInt8]?

        func file(_ variant: WatermarkVariant) -> String { variant == .a ? a : b }
    }

    /// The asset's directory.
    public let directory: String
    /// The media playlist read (the manifest's first).
    public let rendition: String
    /// Its segments.
    public let segments: [Segment]

    /// The watermarked rendition of the package in `directory`, nil when it has no `watermark.json`.
    /// `key` gives the content key a playlist's key URI stands for (the store's), nil when unknown.
    public static func load(directory: String, key: (String) -> [UInt8]?) throws(PackagingError)
        -> WatermarkDetectionAsset?
    {
        guard let manifest = try WatermarkManifest.load(from: directory) else { return nil }
        let rendition = manifest.playlists[0]
        let path = directory + "/" + rendition
        guard let bytes = VerificationRun.readFile(path, limit: 16 << 20) else {
            throw PackagingError(.inputMissing, "cannot read the watermarked playlist \(path)")
        }
        let playlist: ParsedMediaPlaylist
        do { playlist = try ParsedMediaPlaylist(String(decoding: bytes, as: UTF8.self), name: rendition) } catch {
            throw PackagingError(.inputCorrupt, "\(rendition): \(error)")
        }
        let folder = rendition.contains("/") ? String(rendition[...rendition.lastIndex(of: "/")!]) : ""
        var segments: [Segment] = []
        var start = 0.0
        for (index, entry) in playlist.segments.enumerated() {
            guard entry.byteRange == nil, !entry.uri.contains("/"), entry.uri.hasSuffix(".a.ts"),
                let other = WatermarkManifest.variantURI(entry.uri, .b)
            else {
                throw PackagingError(
                    .containerUnsupported,
                    "\(rendition): segment \(entry.uri) is not a whole MPEG-TS A variant beside its playlist; the "
                        + "detector reads the TS layout of --watermark ab")
            }
            var content: [UInt8]? = nil
            var iv: [UInt8]? = nil
            if let line = entry.key, let method = line["METHOD"], method != "NONE" {
                guard method == "SAMPLE-AES" else {
                    throw PackagingError(
                        .containerUnsupported,
                        "\(rendition): the detector reads SAMPLE-AES or clear segments, not \(method)")
                }
                guard let uri = line["URI"], let found = key(uri), found.count == 16 else {
                    throw PackagingError(
                        .encryptedInput, "\(rendition): no content key for the key URI of segment \(index)")
                }
                content = found
                if let hex = line["IV"] {
                    guard let explicit = try? line.hexadecimalSequence("IV"), explicit.count == 16 else {
                        throw PackagingError(.inputCorrupt, "\(rendition): the IV \(hex) is not 16 bytes")
                    }
                    iv = explicit
                } else {
                    // No IV attribute: the media sequence number, big-endian in 16 bytes.
                    let sequence = UInt64(playlist.mediaSequence + index)
                    iv =
                        [UInt8](repeating: 0, count: 8)
                        + (0..<8).map { UInt8(truncatingIfNeeded: sequence >> (56 - 8 * $0)) }
                }
            }
            segments.append(
                Segment(
                    index: index, start: start, duration: entry.duration,
                    a: directory + "/" + folder + entry.uri, b: directory + "/" + folder + other, key: content, iv: iv))
            start += entry.duration
        }
        guard !segments.isEmpty else { throw PackagingError(.inputCorrupt, "\(rendition) lists no segments") }
        return WatermarkDetectionAsset(directory: directory, rendition: rendition, segments: segments)
    }

    /// The block means of every picture of `variant` of `segment` on the grid of its own picture size,
    /// decoded on one thread; an encrypted segment is decrypted into a file under `scratch` first.
    func blockMeans(_ segment: Segment, _ variant: WatermarkVariant, scratch: String) throws(PackagingError)
        -> WatermarkBlockMeans
    {
        let file = segment.file(variant)
        guard let key = segment.key, let iv = segment.iv else { return try Self.measure(file, name: file) }
        let clear = scratch + "/\(segment.index).\(variant.rawValue).h264"
        try Self.decrypt(file, key: key, iv: iv, to: clear)
        defer { unlink(clear) }
        return try Self.measure(clear, name: file)
    }

    private static func measure(_ path: String, name: String) throws(PackagingError) -> WatermarkBlockMeans {
        var grid: WatermarkGrid?
        var frames: [[Float]] = []
        do {
            try WatermarkPictures.forEach(path, threads: 1) { luma, _ in
                let reference = grid ?? WatermarkGrid(width: luma.rowBytes, height: luma.rows)
                grid = reference
                frames.append(
                    reference.measure(
                        luma, .stretch(width: reference.width, height: reference.height, onto: luma.rowBytes, luma.rows)
                    ))
                return frames.count < WatermarkBlockMeans.frameLimit
            }
        } catch {
            throw PackagingError(error.kind, "variant \(name): \(error.message)")
        }
        guard let grid, !frames.isEmpty else { throw PackagingError(.inputCorrupt, "variant \(name) has no picture") }
        return WatermarkBlockMeans(grid: grid, frames: frames)
    }

    /// Writes the H.264 of the SAMPLE-AES transport stream `path` as a clear Annex B stream to `target`,
    /// each access unit decrypted as `verify` decrypts it (`SampleAESCipher.decryptVideo`): a protected
    /// NAL unit loses the layer of emulation prevention added after its encryption and is decrypted,
    /// which gives back its stored bytes, to be written as they are (escaping them again would double
    /// the emulation prevention bytes the encoder wrote).
    static func decrypt(_ path: String, key: [UInt8], iv: [UInt8], to target: String) throws(PackagingError) {
        guard let bytes = VerificationRun.readFile(path, limit: 512 << 20) else {
            throw PackagingError(.inputMissing, "cannot read the variant \(path)")
        }
        var reader = TransportStreamReader(name: path)
        var output: [UInt8] = []
        do {
            let packets = try reader.readAll(Array(bytes.prefix(bytes.count / 188 * 188)))
            guard
                let video = reader.programMap?.streams.first(where: {
                    ElementaryCodec.from(streamType: $0.streamType)?.codec == .h264
                })
            else { throw PackagingError(.inputCorrupt, "\(path) has no H.264 stream") }
            let cipher = try SampleAESCipher(key: key, iv: iv, encrypt: false)
            for packet in packets where packet.pid == video.pid {
                let nals = try packet.payload.withBytes { (stream) throws(CryptoError) in
                    try cipher.decryptVideo(stream)
                }
                for nal in nals {
                    output += [0, 0, 0, 1]
                    output += nal
                }
            }
        } catch let error as PackagingError {
            throw error
        } catch {
            throw PackagingError(.inputCorrupt, "cannot decrypt the variant \(path): \(error)")
        }
        guard FileManager.default.createFile(atPath: target, contents: Data(output)) else {
            throw PackagingError(.outputFailed, "cannot write \(target)")
        }
    }
}
