import Crypto
import FoundationEssentials
import Glibc
import MediaFormats

/// The watermarked video rendition of a packaged asset as the detector reads it: its segments in
/// playlist order (segment `index` is the one the gateway's codeword positions count), where each starts
/// on the playlist's timeline, and both variant files, decrypted on the way to the decoder. Both layouts
/// `--watermark ab` writes are read: MPEG-TS (clear, SAMPLE-AES, AES-128) and fMP4 behind its EXT-X-MAP
/// init segment (clear, `cbcs`, `cenc`, AES-128).
public struct WatermarkDetectionAsset: Sendable {
    /// How a variant file's bytes become what FFmpeg decodes.
    enum Protection: Sendable {
        case clear
        /// MPEG-TS SAMPLE-AES: decrypted here, NAL unit by NAL unit, into an Annex B stream.
        case sampleAES(key: [UInt8], iv: [UInt8])
        /// fMP4 `cbcs` or `cenc`: FFmpeg's MP4 demuxer decrypts with the key (`decryption_key`).
        case commonEncryption(key: [UInt8])
        /// Whole-segment AES-128-CBC with PKCS#7 padding, either layout.
        case wholeSegment(key: [UInt8], iv: [UInt8])
    }

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
        /// fMP4: the init segment (EXT-X-MAP) the variant is read behind; nil for MPEG-TS.
        let initSegment: String?
        let protection: Protection

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
            let initURI = entry.map?["URI"]
            let fragmented = entry.map != nil
            guard entry.byteRange == nil, !entry.uri.contains("/"),
                entry.uri.hasSuffix(fragmented ? ".a.m4s" : ".a.ts"),
                let other = WatermarkManifest.variantURI(entry.uri, .b),
                !fragmented || (initURI.map { !$0.isEmpty && !$0.contains("/") } ?? false)
            else {
                throw PackagingError(
                    .containerUnsupported,
                    "\(rendition): segment \(entry.uri) is not a whole A variant beside its playlist (and its init "
                        + "segment); the detector reads the layouts --watermark ab writes")
            }
            let protection = try Self.protection(
                of: entry, index: index, fragmented: fragmented, mediaSequence: playlist.mediaSequence,
                rendition: rendition, key: key)
            segments.append(
                Segment(
                    index: index, start: start, duration: entry.duration, a: directory + "/" + folder + entry.uri,
                    b: directory + "/" + folder + other, initSegment: initURI.map { directory + "/" + folder + $0 },
                    protection: protection))
            start += entry.duration
        }
        guard !segments.isEmpty else { throw PackagingError(.inputCorrupt, "\(rendition) lists no segments") }
        return WatermarkDetectionAsset(directory: directory, rendition: rendition, segments: segments)
    }

    /// How segment `index`'s EXT-X-KEY in force says its files are protected, with the content key
    /// `key` finds for its URI. An IV left out is the media sequence number (RFC 8216 §5.2).
    private static func protection(
        of entry: ParsedMediaPlaylist.Segment, index: Int, fragmented: Bool, mediaSequence: Int, rendition: String,
        key: (String) -> [UInt8]?
    ) throws(PackagingError) -> Protection {
        guard let line = entry.key, let method = line["METHOD"], method != "NONE" else { return .clear }
        let known = fragmented ? ["SAMPLE-AES", "SAMPLE-AES-CTR", "AES-128"] : ["SAMPLE-AES", "AES-128"]
        guard known.contains(method) else {
            throw PackagingError(
                .containerUnsupported,
                "\(rendition): the detector reads \(known.joined(separator: ", ")) or clear "
                    + "\(fragmented ? "fMP4" : "MPEG-TS") segments, not \(method)")
        }
        guard let uri = line["URI"], let content = key(uri), content.count == 16 else {
            throw PackagingError(.encryptedInput, "\(rendition): no content key for the key URI of segment \(index)")
        }
        if fragmented && method != "AES-128" { return .commonEncryption(key: content) }
        var iv: [UInt8]
        if let hex = line["IV"] {
            guard let explicit = try? line.hexadecimalSequence("IV"), explicit.count == 16 else {
                throw PackagingError(.inputCorrupt, "\(rendition): the IV \(hex) is not 16 bytes")
            }
            iv = explicit
        } else {
            let sequence = UInt64(mediaSequence + index)
            iv = [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: sequence >> (56 - 8 * $0)) }
        }
        return method == "AES-128" ? .wholeSegment(key: content, iv: iv) : .sampleAES(key: content, iv: iv)
    }

    /// The block means of every picture of `variant` of `segment` on the grid of its own picture size,
    /// decoded on one thread. Unless it is a clear MPEG-TS file, what FFmpeg reads is written under
    /// `scratch` first: the file decrypted (AES-128, SAMPLE-AES), or behind its init segment (fMP4).
    func blockMeans(_ segment: Segment, _ variant: WatermarkVariant, scratch: String) throws(PackagingError)
        -> WatermarkBlockMeans
    {
        let file = segment.file(variant)
        if case .clear = segment.protection, segment.initSegment == nil { return try Self.measure(file, name: file) }
        guard var bytes = VerificationRun.readFile(file, limit: 512 << 20).map({ [UInt8]($0) }) else {
            throw PackagingError(.inputMissing, "cannot read the variant \(file)")
        }
        var options: [String: String] = [:]
        switch segment.protection {
        case .clear: break
        case .sampleAES(let key, let iv): bytes = try Self.decrypt(bytes, name: file, key: key, iv: iv)
        case .commonEncryption(let key): options["decryption_key"] = key.hexString
        case .wholeSegment(let key, let iv):
            do { bytes = try AES128Padded.decrypt(bytes, key: key, iv: iv) } catch {
                throw PackagingError(.inputCorrupt, "cannot decrypt the variant \(file) (AES-128): \(error)")
            }
        }
        if let initSegment = segment.initSegment {
            guard let header = VerificationRun.readFile(initSegment, limit: 16 << 20) else {
                throw PackagingError(.inputMissing, "cannot read the init segment \(initSegment)")
            }
            bytes = [UInt8](header) + bytes
        }
        // SAMPLE-AES is decrypted to the video's elementary stream; the others stay in their container.
        let suffix =
            if case .sampleAES = segment.protection { "h264" } else { segment.initSegment == nil ? "ts" : "mp4" }
        let clear = scratch + "/\(segment.index).\(variant.rawValue).\(suffix)"
        guard FileManager.default.createFile(atPath: clear, contents: Data(bytes)) else {
            throw PackagingError(.outputFailed, "cannot write \(clear)")
        }
        defer { unlink(clear) }
        return try Self.measure(clear, name: file, options: options)
    }

    private static func measure(_ path: String, name: String, options: [String: String] = [:]) throws(PackagingError)
        -> WatermarkBlockMeans
    {
        var grid: WatermarkGrid?
        var frames: [[Float]] = []
        do {
            try WatermarkPictures.forEach(path, options: options, threads: 1) { luma, _ in
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

    /// The H.264 of the SAMPLE-AES transport stream `bytes` (the file `path`) as a clear Annex B stream,
    /// each access unit decrypted as `verify` decrypts it (`SampleAESCipher.decryptVideo`): a protected
    /// NAL unit loses the layer of emulation prevention added after its encryption and is decrypted,
    /// which gives back its stored bytes, to be written as they are (escaping them again would double
    /// the emulation prevention bytes the encoder wrote).
    static func decrypt(_ bytes: [UInt8], name path: String, key: [UInt8], iv: [UInt8]) throws(PackagingError)
        -> [UInt8]
    {
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
        return output
    }
}
