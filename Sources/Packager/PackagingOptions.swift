public import Protection
import Synchronization

/// How segments are encrypted.
public enum EncryptionMode: String, Sendable, CaseIterable {
    /// SAMPLE-AES: H.264 slices and audio frames encrypted inside a clear TS (the default).
    case sampleAES = "sample-aes"
    /// Whole segments encrypted with AES-128-CBC and PKCS#7 padding (`METHOD=AES-128`).
    case aes128 = "aes-128"
    /// CENC `cenc`, fMP4 only: AES-CTR over 16-byte-aligned ranges with 8-byte IVs per sample
    /// (`METHOD=SAMPLE-AES-CTR`, the DASH default).
    case cenc
    /// No encryption.
    case none
}

/// The segment container.
public enum ContainerFormat: String, Sendable, CaseIterable {
    /// MPEG-2 transport stream segments (the default).
    case transportStream = "ts"
    /// CMAF fragmented MP4: an init segment and `moof`+`mdat` segments per track, with an HLS master and
    /// a DASH MPD; SAMPLE-AES there is CENC `cbcs`.
    case fragmentedMP4 = "fmp4"
}

/// Which key system the playlists name.
public enum KeyFormat: String, Sendable, CaseIterable {
    /// The default `identity` format: the key URI returns the 16 raw key bytes.
    case identity
    /// FairPlay Streaming: `skd://` URIs and `KEYFORMAT="com.apple.streamingkeydelivery"`.
    case fairplay
}

/// How audio is segmented.
public enum AudioSegmentFormat: String, Sendable, CaseIterable {
    /// MPEG-2 transport stream segments (the default).
    case transportStream = "ts"
    /// Packed audio: an ID3 tag with the timestamp (and audio setup under SAMPLE-AES), then ADTS or
    /// AC-3 frames.
    case packed
}

/// A forensic watermark the packager can put in the video.
public enum WatermarkScheme: String, Sendable, CaseIterable {
    /// Two variants of every video segment, A with a keyed luma pattern added and B with it subtracted
    /// (`WatermarkPattern`); a gateway serves each session its own sequence of variants.
    case ab
}

/// What a packaging job is asked to do; a value, so it crosses threads and can be logged (it holds no
/// key unless the caller supplies one).
public struct PackagingOptions: Sendable, Equatable {
    /// The media file to package.
    public var input: String
    /// The output directory; it is built beside itself and renamed into place when complete.
    public var output: String
    /// The 16-byte content key, or nil to generate one from OpenSSL's RNG.
    public var key: [UInt8]?
    /// The 16-byte IV written on every EXT-X-KEY, or nil to generate one.
    public var iv: [UInt8]?
    /// The 16-byte key ID (substituted for `{kid}`), or nil to generate one.
    public var keyID: [UInt8]?
    /// Where to write the key (16 raw bytes, mode 0600), or nil to write no key file. It must not be
    /// inside `output`.
    public var keyFile: String?
    /// The key URI, where `{kid}` becomes the key ID in hex; nil means `skd://{kid}` for FairPlay and,
    /// otherwise, the key file's path relative to the playlists.
    public var keyURITemplate: String?
    /// The key system the playlists name.
    public var keyFormat: KeyFormat = .identity
    /// How segments are encrypted.
    public var encryption: EncryptionMode = .sampleAES
    /// The segment container.
    public var container: ContainerFormat = .transportStream
    /// Segments per key period (`--key-period`): a new key, key ID and IV every this many segments of
    /// each playlist, the key file then being a key list (`KeyListFormat`); nil for one key.
    public var keyPeriod: Int?
    /// True when no container was asked for (`--container` absent): HEVC input then gets fMP4 with a
    /// notice instead of the TS refusal.
    public var containerIsDefault = true
    /// The Clear Key license server the DASH manifest names (fMP4 only), or nil.
    public var licenseURL: String?
    /// The target segment duration in seconds; video is cut at the first IDR at or after it.
    public var segmentDuration: Double = 6
    /// The segment format of audio playlists; packed audio puts every audio stream in a playlist of
    /// its own, a rendition when there is video.
    public var audioFormat: AudioSegmentFormat = .transportStream
    /// Seconds of video to make from a still image input.
    public var stillDuration: Double = 10
    /// Make the video of a still image flicker over this area (`--flicker[=x,y,w,h]`): 60 fps alternating
    /// two complementary random pixel masks, a new pair at every IDR; nil for a plain still. Refused
    /// for an input that is not a still image.
    public var flicker: FlickerArea?
    /// Replace an existing output directory and key file (only once the new output is complete).
    public var force = false
    /// The most pixels a video picture may have (`--max-pixels`, default 8192×8192): larger video is
    /// refused (`unsupportedCodec`) before any decoder allocates for it. The gateway's packaging jobs run
    /// in its process with this default, which bounds what a hostile header can make them allocate.
    public var maxPixels = 8192 * 8192
    /// The forensic watermark (`--watermark ab`), or nil for none.
    public var watermark: WatermarkScheme?
    /// The 16-byte key of the watermark pattern (`--watermark-key`), or nil to draw one from OpenSSL's
    /// RNG; it is written to the output's `watermark.json` (it is no secret from the operator: the
    /// gateway's per-session codeword key is).
    public var watermarkKey: [UInt8]?

    /// Options to package `input` into `output` with the defaults.
    public init(input: String, output: String) {
        self.input = input
        self.output = output
    }

    /// The key file beside `output`: the output directory's path with `.key` appended.
    public static func defaultKeyFile(for output: String) -> String {
        var trimmed = output
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        return trimmed + ".key"
    }
}

/// How far a job has got.
public struct PackagingProgress: Sendable, Equatable {
    /// From 0 to 1; 1 only once the output is in place.
    public var fraction: Double
    /// Seconds of media packaged so far.
    public var mediaSeconds: Double
    /// Segments completed so far, over all playlists.
    public var segmentsWritten: Int
}

/// A flag a caller sets to stop a running job; the job checks it between packets, removes its
/// temporary output and throws `PackagingError.Kind.cancelled`.
public final class PackagingCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    /// A flag that is not set.
    public init() {}

    /// Asks the job to stop.
    public func cancel() { flag.store(true, ordering: .releasing) }

    /// True once `cancel()` was called.
    public var isCancelled: Bool { flag.load(ordering: .acquiring) }
}

/// One stream of the packaged output.
public struct PackagedStream: Sendable, Equatable {
    /// `video` or `audio`.
    public var kind: String
    /// The clear codec as CODECS names it: `avc1.64001e`, `mp4a.40.2`, `ac-3`, `ec-3`.
    public var codec: String
    /// The stream's index in the input.
    public var sourceIndex: Int
    /// The media playlist that carries it, relative to the output directory.
    public var playlist: String
    /// Access units written (video frames, audio frames or AC-3 access units).
    public var accessUnits: Int
    /// The input codec when the stream was transcoded (such as `mp3`), or nil when copied.
    public var transcodedFrom: String?
    /// The language tag, when the input names one.
    public var language: String?
}

/// What a finished job produced.
public struct PackagingResult: Sendable, Equatable {
    /// The published output directory.
    public var outputDirectory: String
    /// The master playlist's path.
    public var masterPlaylist: String
    /// Every media playlist, relative to the output directory (I-frame playlist included).
    public var mediaPlaylists: [String]
    /// Where the key was written, or nil when no key file was asked for.
    public var keyFile: String?
    /// The key ID.
    public var keyID: [UInt8]
    /// The content key; nil with `EncryptionMode.none`.
    public var key: [UInt8]?
    /// The IV on the EXT-X-KEY lines (the first segment's, for AES-128).
    public var iv: [UInt8]?
    /// The key URI written in the playlists, or nil without encryption.
    public var keyURI: String?
    /// The encryption applied.
    public var encryption: EncryptionMode
    /// The container written (fMP4 for HEVC input even without `--container`).
    public var container: ContainerFormat = .transportStream
    /// The streams, video first.
    public var streams: [PackagedStream]
    /// Segments written, over all playlists.
    public var segmentCount: Int
    /// The presentation's duration in seconds.
    public var duration: Double
    /// Bytes of segments written.
    public var bytesWritten: Int
    /// One-line notices such as "transcoding mp3 to AAC-LC", in the order they were given.
    public var notices: [String]
    /// Segments per key period, or nil for one key.
    public var keyPeriod: Int? = nil
    /// Every key period's key ID and key, period 0 first (the one `keyID` and `key` without rotation);
    /// empty without encryption.
    public var periodKeys: [PeriodKeyPair] = []
}

/// One key period's key ID and content key, as a packaging result lists them.
public struct PeriodKeyPair: Sendable, Equatable {
    /// The 16-byte key ID.
    public var keyID: [UInt8]
    /// The 16-byte content key.
    public var key: [UInt8]

    /// The pair of `keyID` and `key`.
    public init(keyID: [UInt8], key: [UInt8]) {
        self.keyID = keyID
        self.key = key
    }
}
