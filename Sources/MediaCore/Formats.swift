import CFFmpeg

/// An audio sample format, the Swift value of FFmpeg's `AVSampleFormat`.
public struct SampleFormat: Sendable, Hashable, CustomStringConvertible {
    let raw: AVSampleFormat

    init(_ raw: AVSampleFormat) { self.raw = raw }

    /// Looks a format up by FFmpeg's name (`fltp`, `s16`…), or nil when unknown (`av_get_sample_fmt`).
    public init?(name: String) {
        let raw = av_get_sample_fmt(name)
        guard raw != AV_SAMPLE_FMT_NONE else { return nil }
        self.raw = raw
    }

    public static let u8 = SampleFormat(AV_SAMPLE_FMT_U8)
    public static let s16 = SampleFormat(AV_SAMPLE_FMT_S16)
    public static let s32 = SampleFormat(AV_SAMPLE_FMT_S32)
    public static let float = SampleFormat(AV_SAMPLE_FMT_FLT)
    public static let double = SampleFormat(AV_SAMPLE_FMT_DBL)
    public static let s16Planar = SampleFormat(AV_SAMPLE_FMT_S16P)
    public static let s32Planar = SampleFormat(AV_SAMPLE_FMT_S32P)
    public static let floatPlanar = SampleFormat(AV_SAMPLE_FMT_FLTP)
    public static let doublePlanar = SampleFormat(AV_SAMPLE_FMT_DBLP)

    /// FFmpeg's name for the format.
    public var name: String { av_get_sample_fmt_name(raw).map { String(cString: $0) } ?? "none" }
    /// Bytes in one sample of one channel.
    public var bytesPerSample: Int { Int(av_get_bytes_per_sample(raw)) }
    /// True when each channel has its own plane.
    public var isPlanar: Bool { av_sample_fmt_is_planar(raw) != 0 }
    /// The same format with channels interleaved.
    public var packed: SampleFormat { SampleFormat(av_get_packed_sample_fmt(raw)) }
    public var description: String { name }
}

/// A pixel format, the Swift value of FFmpeg's `AVPixelFormat`, with what its descriptor says.
public struct PixelFormat: Sendable, Hashable, CustomStringConvertible {
    let raw: AVPixelFormat

    init(_ raw: AVPixelFormat) { self.raw = raw }

    /// Looks a format up by FFmpeg's name (`yuv420p`…), or nil when unknown (`av_get_pix_fmt`).
    public init?(name: String) {
        let raw = av_get_pix_fmt(name)
        guard raw != AV_PIX_FMT_NONE else { return nil }
        self.raw = raw
    }

    public static let yuv420p = PixelFormat(AV_PIX_FMT_YUV420P)
    public static let yuv422p = PixelFormat(AV_PIX_FMT_YUV422P)
    public static let yuv444p = PixelFormat(AV_PIX_FMT_YUV444P)
    public static let yuvj420p = PixelFormat(AV_PIX_FMT_YUVJ420P)
    public static let gray8 = PixelFormat(AV_PIX_FMT_GRAY8)
    public static let rgb24 = PixelFormat(AV_PIX_FMT_RGB24)
    public static let rgba = PixelFormat(AV_PIX_FMT_RGBA)
    public static let bgr0 = PixelFormat(AV_PIX_FMT_BGR0)

    /// FFmpeg's name for the format.
    public var name: String { av_get_pix_fmt_name(raw).map { String(cString: $0) } ?? "none" }
    public var description: String { name }

    private var descriptor: AVPixFmtDescriptor? { av_pix_fmt_desc_get(raw)?.pointee }

    /// The number of planes the format stores.
    public var planeCount: Int { Int(av_pix_fmt_count_planes(raw)) }
    /// log2 of the horizontal chroma subsampling (1 for 4:2:0 and 4:2:2).
    public var log2ChromaWidth: Int { Int(descriptor?.log2_chroma_w ?? 0) }
    /// log2 of the vertical chroma subsampling (1 for 4:2:0).
    public var log2ChromaHeight: Int { Int(descriptor?.log2_chroma_h ?? 0) }
    /// True for RGB formats.
    public var isRGB: Bool { (descriptor?.flags ?? 0) & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 }
    /// True when every component lives in its own plane.
    public var isPlanar: Bool { (descriptor?.flags ?? 0) & UInt64(AV_PIX_FMT_FLAG_PLANAR) != 0 }
    /// True when the format carries alpha.
    public var hasAlpha: Bool { (descriptor?.flags ?? 0) & UInt64(AV_PIX_FMT_FLAG_ALPHA) != 0 }
    /// Bits per component of the first component.
    public var bitDepth: Int { Int(descriptor?.comp.0.depth ?? 0) }
    /// The number of components (Y, U, V, A…).
    public var componentCount: Int { Int(descriptor?.nb_components ?? 0) }
    /// True for the `yuvj…` formats, whose range is full (0–255) by definition.
    public var isJPEGRange: Bool { name.hasPrefix("yuvj") }

    /// True for planar 8-bit YUV or gray formats, which GuardPlay masks in place without conversion.
    public var isPlanarYUV8: Bool {
        !isRGB && bitDepth == 8 && (isPlanar || componentCount == 1) && planeCount == componentCount
    }
}

/// Target format for resampled audio.
public struct AudioFormat: Sendable, Hashable, CustomStringConvertible {
    /// Samples per second.
    public var sampleRate: Int
    /// Number of channels; their layout is FFmpeg's default for the count.
    public var channelCount: Int
    /// Sample format.
    public var sampleFormat: SampleFormat

    /// Creates a format.
    public init(sampleRate: Int, channelCount: Int, sampleFormat: SampleFormat) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.sampleFormat = sampleFormat
    }

    public var description: String { "\(sampleRate) Hz, \(channelCount) ch, \(sampleFormat)" }
}
