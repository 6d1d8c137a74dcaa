import CFFmpeg

/// What an encoder is asked to make.
public struct EncoderSettings: Sendable {
    /// The kind of media and its shape.
    public enum Media: Sendable {
        /// Audio in this format; a nil sample format means the codec's preferred one.
        case audio(sampleRate: Int, channelCount: Int, sampleFormat: SampleFormat?)
        /// Pictures of this size; a nil pixel format means the codec's preferred one.
        case video(width: Int, height: Int, pixelFormat: PixelFormat?, frameRate: Rational)
    }

    /// FFmpeg's encoder name, such as `pcm_f32le`, `flac`, `aac`, `ffv1` or `libx264`.
    public var codecName: String
    /// Audio or video, with its shape.
    public var media: Media
    /// Target bit rate in bits per second, or 0 for the codec's default.
    public var bitRate: Int64 = 0
    /// Set when the container wants codec headers in extradata (`AVFMT_GLOBALHEADER`).
    public var globalHeader = false
    /// Codec-private options passed to `avcodec_open2`, such as `preset` or `crf`.
    public var options: [String: String] = [:]
    /// Distance between key frames, or 0 for the codec's default.
    public var gopSize = 0
    /// The time base of the frames it takes; nil means 1/sample rate for audio and 1/frame rate for video.
    /// Video with a stream's own time base keeps variable frame rates exact.
    public var timeBase: Rational?

    /// Creates settings for `codecName`.
    public init(codecName: String, media: Media) {
        self.codecName = codecName
        self.media = media
    }
}

/// Owner of an encoding `AVCodecContext`, with the FIFO that regroups audio into the codec's fixed
/// frame size (`AVAudioFifo`, freed in `deinit`).
public final class Encoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    private var fifo: OpaquePointer?
    private let fixedFrameSize: Int
    private var nextAudioPTS: Int64?
    private let packet = Packet()
    private let staging = Frame()
    /// The time base of the frames it takes and the packets it returns.
    public let timeBase: Rational
    /// The encoder's name.
    public let name: String

    /// Finds and opens the encoder (`avcodec_find_encoder_by_name`, `avcodec_open2`).
    public init(settings: EncoderSettings) throws(MediaError) {
        name = settings.codecName
        guard let codec = avcodec_find_encoder_by_name(settings.codecName) else {
            throw MediaError(
                operation: "avcodec_find_encoder_by_name", message: "no encoder '\(settings.codecName)'",
                kind: .unsupported)
        }
        guard let context = avcodec_alloc_context3(codec) else { fatalError("avcodec_alloc_context3: out of memory") }
        self.context = context
        switch settings.media {
        case .audio(let rate, let channels, let format):
            context.pointee.sample_rate = Int32(rate)
            av_channel_layout_default(&context.pointee.ch_layout, Int32(channels))
            context.pointee.sample_fmt = format?.raw ?? codec.pointee.sample_fmts?.pointee ?? AV_SAMPLE_FMT_S16
            context.pointee.time_base = AVRational(num: 1, den: Int32(rate))
        case .video(let width, let height, let format, let frameRate):
            context.pointee.width = Int32(width)
            context.pointee.height = Int32(height)
            context.pointee.pix_fmt = format?.raw ?? codec.pointee.pix_fmts?.pointee ?? AV_PIX_FMT_YUV420P
            let rate = frameRate.numerator > 0 && frameRate.denominator > 0 ? frameRate : Rational(25, 1)
            context.pointee.time_base = settings.timeBase?.av ?? AVRational(num: rate.denominator, den: rate.numerator)
            context.pointee.framerate = rate.av
            context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
            if settings.gopSize > 0 { context.pointee.gop_size = Int32(settings.gopSize) }
        }
        if settings.bitRate > 0 { context.pointee.bit_rate = settings.bitRate }
        if settings.globalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        var dictionary: OpaquePointer? = nil
        for (key, value) in settings.options { av_dict_set(&dictionary, key, value, 0) }
        let status = avcodec_open2(context, codec, &dictionary)
        av_dict_free(&dictionary)
        try check(status, "avcodec_open2(\(settings.codecName))")
        timeBase = Rational(context.pointee.time_base)
        let variable = codec.pointee.capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE != 0
        if context.pointee.codec_type == AVMEDIA_TYPE_AUDIO, context.pointee.frame_size > 0, !variable {
            fixedFrameSize = Int(context.pointee.frame_size)
            fifo = av_audio_fifo_alloc(context.pointee.sample_fmt, context.pointee.ch_layout.nb_channels, 1)
        } else {
            fixedFrameSize = 0
        }
    }

    deinit {
        if let fifo { av_audio_fifo_free(fifo) }
        var owned: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&owned)
    }

    /// The audio format the encoder takes, for configuring a resampler in front of it.
    public var audioFormat: AudioFormat {
        AudioFormat(
            sampleRate: Int(context.pointee.sample_rate), channelCount: Int(context.pointee.ch_layout.nb_channels),
            sampleFormat: SampleFormat(context.pointee.sample_fmt))
    }

    /// The pixel format the encoder takes.
    public var pixelFormat: PixelFormat { PixelFormat(context.pointee.pix_fmt) }

    /// The picture width the encoder takes, 0 for audio.
    public var width: Int { Int(context.pointee.width) }

    /// The picture height the encoder takes, 0 for audio.
    public var height: Int { Int(context.pointee.height) }

    /// The codec's extradata after opening (such as the AudioSpecificConfig of AAC).
    public var extradata: [UInt8] {
        guard let data = context.pointee.extradata, context.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(context.pointee.extradata_size)))
    }

    /// Samples per frame for fixed-frame-size audio codecs, or 0.
    public var frameSize: Int { fixedFrameSize }

    /// Encodes `frame` (pts in `timeBase`), or drains the encoder when `frame` is nil, and calls `emit`
    /// with each packet produced. The packet is reused after `emit` returns. `forceKeyFrame` asks a
    /// video encoder for a key frame here (`pict_type` I; libx264 makes it an IDR with `forced-idr`).
    public func encode(_ frame: Frame?, forceKeyFrame: Bool = false, _ emit: (Packet) throws -> Void) throws {
        if fixedFrameSize > 0, let fifo {
            try encodeThroughFIFO(frame, fifo, emit)
        } else {
            if isVideo, let frame {
                frame.pointer.pointee.pict_type = forceKeyFrame ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
            }
            try sendAndDrain(frame?.pointer, emit)
        }
    }

    private func encodeThroughFIFO(_ frame: Frame?, _ fifo: OpaquePointer, _ emit: (Packet) throws -> Void) throws {
        if let frame {
            if nextAudioPTS == nil { nextAudioPTS = frame.pts == noTimestamp ? 0 : frame.pts }
            let written = frame.pointer.pointee.extended_data.withMemoryRebound(
                to: UnsafeMutableRawPointer?.self, capacity: 8
            ) { planes in
                av_audio_fifo_write(fifo, planes, frame.pointer.pointee.nb_samples)
            }
            try check(written, "av_audio_fifo_write(\(name))")
        }
        while av_audio_fifo_size(fifo) >= Int32(fixedFrameSize) || (frame == nil && av_audio_fifo_size(fifo) > 0) {
            let count = min(Int(av_audio_fifo_size(fifo)), fixedFrameSize)
            staging.reset()
            let small = context.pointee.codec.pointee.capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME != 0
            let allocated = small ? count : fixedFrameSize
            staging.pointer.pointee.nb_samples = Int32(allocated)
            staging.pointer.pointee.format = context.pointee.sample_fmt.rawValue
            staging.pointer.pointee.sample_rate = context.pointee.sample_rate
            try check(
                av_channel_layout_copy(&staging.pointer.pointee.ch_layout, &context.pointee.ch_layout),
                "av_channel_layout_copy")
            try check(av_frame_get_buffer(staging.pointer, 0), "av_frame_get_buffer(\(name))")
            if allocated > count {
                av_samples_set_silence(
                    staging.pointer.pointee.extended_data, 0, Int32(allocated),
                    staging.pointer.pointee.ch_layout.nb_channels,
                    context.pointee.sample_fmt)
            }
            let read = staging.pointer.pointee.extended_data.withMemoryRebound(
                to: UnsafeMutableRawPointer?.self, capacity: 8
            ) { planes in
                av_audio_fifo_read(fifo, planes, Int32(count))
            }
            try check(read, "av_audio_fifo_read(\(name))")
            staging.pointer.pointee.pts = nextAudioPTS ?? 0
            nextAudioPTS = (nextAudioPTS ?? 0) + Int64(allocated)
            try sendAndDrain(staging.pointer, emit)
        }
        if frame == nil { try sendAndDrain(nil, emit) }
    }

    /// True for video encoders; their input frames get their picture type cleared, so an encoder does
    /// not copy a decoder's frame types.
    private var isVideo: Bool { context.pointee.codec_type == AVMEDIA_TYPE_VIDEO }

    private func sendAndDrain(_ frame: UnsafeMutablePointer<AVFrame>?, _ emit: (Packet) throws -> Void) throws {
        let status = avcodec_send_frame(context, frame)
        if status != cffmpeg_averror_eof() {
            try check(status, "avcodec_send_frame(\(name))")
        }
        while true {
            packet.reset()
            let received = avcodec_receive_packet(context, packet.pointer)
            if received == cffmpeg_averror_eagain() || received == cffmpeg_averror_eof() { return }
            try check(received, "avcodec_receive_packet(\(name))")
            try emit(packet)
        }
    }
}

@available(*, unavailable, message: "an Encoder is one C object with one owner")
extension Encoder: Sendable {}
