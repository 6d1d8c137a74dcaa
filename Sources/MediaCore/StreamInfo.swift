import CFFmpeg

/// What a stream carries.
public enum MediaType: String, Sendable, Hashable {
    case audio, video, subtitle, data, attachment, unknown

    init(_ type: AVMediaType) {
        switch type {
        case AVMEDIA_TYPE_AUDIO: self = .audio
        case AVMEDIA_TYPE_VIDEO: self = .video
        case AVMEDIA_TYPE_SUBTITLE: self = .subtitle
        case AVMEDIA_TYPE_DATA: self = .data
        case AVMEDIA_TYPE_ATTACHMENT: self = .attachment
        default: self = .unknown
        }
    }
}

/// A Sendable copy of what GuardPlay needs from an `AVStream` and its `AVCodecParameters`.
///
/// FFmpeg owns the stream; this value is copied out when the input is opened, so it outlives it.
public struct StreamInfo: Sendable, Hashable {
    /// The stream's index in its container.
    public var index: Int
    /// Audio, video or other.
    public var mediaType: MediaType
    /// FFmpeg's codec name (`avcodec_get_name`): `h264`, `hevc`, `aac`, `ac3`, `eac3`, `mp3`, `opus`…
    public var codecName: String
    /// The container's codec tag as four characters (`avc1`, `mp4a`, `encv`…), or empty.
    public var codecTag: String
    /// The time base of the stream's timestamps.
    public var timeBase: Rational
    /// The start time in `timeBase`, or nil when unknown.
    public var startTime: Int64?
    /// When the first sample the decoder outputs is presented, in `timeBase`, or nil when unknown: the
    /// start time, except for audio that starts at a negative time with priming samples its decoder drops
    /// itself (Opus in Matroska/WebM: `start_time` -7 ms, `initial_padding` 312 samples), where it is the
    /// start plus that padding, rounded as libavcodec moves the first frame's timestamp. Ogg and MP4 have
    /// FFmpeg fold the padding into `start_time` already.
    public var presentationStart: Int64?
    /// The duration in `timeBase`, or nil when unknown.
    public var duration: Int64?
    /// The number of frames the container declares, or 0 when unknown.
    public var frameCount: Int64
    /// The codec's extradata: avcC for MP4 H.264, AudioSpecificConfig for AAC, and so on.
    public var extradata: [UInt8]
    /// The declared bit rate in bits per second, or 0.
    public var bitRate: Int64
    /// The codec profile (`AVCodecParameters.profile`), or -99 when unknown.
    public var profile: Int32
    /// The codec level, or -99 when unknown.
    public var level: Int32
    /// The `language` metadata tag, such as `eng`, or nil.
    public var language: String?
    /// The `title` metadata tag, or nil.
    public var title: String?
    /// True for a cover-art picture stored as a video stream.
    public var isAttachedPicture: Bool
    /// True when the container marks the stream encrypted (CENC `encv`/`enca`).
    public var isEncrypted: Bool

    /// Video width in pixels, 0 for other media.
    public var width: Int
    /// Video height in pixels, 0 for other media.
    public var height: Int
    /// The pixel format's name (`yuv420p`…), or empty.
    public var pixelFormatName: String
    /// The average frame rate, or 0/0 when unknown.
    public var frameRate: Rational

    /// Audio sample rate in Hz, 0 for other media.
    public var sampleRate: Int
    /// Audio channel count, 0 for other media.
    public var channelCount: Int
    /// The sample format's name (`fltp`, `s16`…), or empty.
    public var sampleFormatName: String
    /// Samples per audio frame, or 0 when variable or unknown.
    public var frameSize: Int

    /// The duration in seconds, or nil when unknown.
    public var durationSeconds: Double? {
        duration.map { Double($0) * timeBase.doubleValue }
    }

    init(_ stream: UnsafeMutablePointer<AVStream>) {
        let parameters = stream.pointee.codecpar!.pointee
        index = Int(stream.pointee.index)
        mediaType = MediaType(parameters.codec_type)
        codecName = String(cString: avcodec_get_name(parameters.codec_id))
        codecTag = fourCC(parameters.codec_tag)
        timeBase = Rational(stream.pointee.time_base)
        let start = stream.pointee.start_time
        startTime = start == cffmpeg_nopts_value() ? nil : start
        presentationStart = startTime
        if let start = startTime, start < 0, parameters.codec_type == AVMEDIA_TYPE_AUDIO,
            parameters.initial_padding > 0,
            parameters.sample_rate > 0
        {
            let padding = av_rescale_q(
                Int64(parameters.initial_padding), AVRational(num: 1, den: parameters.sample_rate),
                stream.pointee.time_base)
            presentationStart = start + padding
        }
        let length = stream.pointee.duration
        duration = length == cffmpeg_nopts_value() || length <= 0 ? nil : length
        frameCount = stream.pointee.nb_frames
        if let data = parameters.extradata, parameters.extradata_size > 0 {
            extradata = Array(UnsafeBufferPointer(start: data, count: Int(parameters.extradata_size)))
        } else {
            extradata = []
        }
        bitRate = parameters.bit_rate
        profile = parameters.profile
        level = parameters.level
        language = metadataValue(stream.pointee.metadata, "language")
        title = metadataValue(stream.pointee.metadata, "title")
        isAttachedPicture = stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0
        var sideDataSize = 0
        let initInfo = av_stream_get_side_data(stream, AV_PKT_DATA_ENCRYPTION_INIT_INFO, &sideDataSize)
        isEncrypted = initInfo != nil || ["encv", "enca"].contains(fourCC(parameters.codec_tag))

        width = Int(parameters.width)
        height = Int(parameters.height)
        if parameters.codec_type == AVMEDIA_TYPE_VIDEO, let name = av_get_pix_fmt_name(AVPixelFormat(parameters.format))
        {
            pixelFormatName = String(cString: name)
        } else {
            pixelFormatName = ""
        }
        frameRate = Rational(stream.pointee.avg_frame_rate)

        sampleRate = Int(parameters.sample_rate)
        channelCount = Int(parameters.ch_layout.nb_channels)
        if parameters.codec_type == AVMEDIA_TYPE_AUDIO,
            let name = av_get_sample_fmt_name(AVSampleFormat(parameters.format))
        {
            sampleFormatName = String(cString: name)
        } else {
            sampleFormatName = ""
        }
        frameSize = Int(parameters.frame_size)
    }
}

/// A little-endian four-character code as text, with unprintable bytes dropped.
func fourCC(_ tag: UInt32) -> String {
    guard tag != 0 else { return "" }
    let bytes = (0..<4).map { UInt8((tag >> (8 * UInt32($0))) & 0xFF) }
    return String(decoding: bytes.filter { $0 >= 0x20 && $0 < 0x7F }, as: UTF8.self)
}

/// Reads one value from an FFmpeg metadata dictionary (`av_dict_get`).
func metadataValue(_ dictionary: OpaquePointer?, _ key: String) -> String? {
    guard let dictionary, let entry = av_dict_get(dictionary, key, nil, 0), let value = entry.pointee.value else {
        return nil
    }
    return String(cString: value)
}
