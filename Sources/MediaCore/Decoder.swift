import CFFmpeg

/// What receiving from a decoder or encoder produced.
public enum CodecStep: Sendable, Equatable {
    /// A frame (or packet) was filled.
    case output
    /// The codec needs more input before it can produce output.
    case needsInput
    /// The codec has been drained and will produce nothing more.
    case endOfStream
}

/// Owner of a decoding `AVCodecContext` (`avcodec_alloc_context3`, freed with
/// `avcodec_free_context` in `deinit`).
public final class Decoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    private let subject: String
    /// The time base of the packets it takes and the frames it returns (the stream's).
    public let timeBase: Rational

    /// Opens a decoder for `parameters`; `maxPixels` is libavcodec's `max_pixels` option, so no frame
    /// larger than that is allocated (a later SPS claiming more makes that picture fail to decode).
    init(
        parameters: UnsafePointer<AVCodecParameters>, timeBase: Rational, threads: Int, maxPixels: Int,
        subject: String
    ) throws(MediaError) {
        self.subject = subject
        self.timeBase = timeBase
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
            throw MediaError(
                operation: "avcodec_find_decoder(\(subject))", message: "no decoder for codec '\(name)'",
                kind: .unsupported)
        }
        guard let context = avcodec_alloc_context3(codec) else { fatalError("avcodec_alloc_context3: out of memory") }
        self.context = context
        try check(avcodec_parameters_to_context(context, parameters), "avcodec_parameters_to_context(\(subject))")
        context.pointee.pkt_timebase = timeBase.av
        context.pointee.thread_count = Int32(threads)
        var options: OpaquePointer? = nil
        av_dict_set(&options, "max_pixels", "\(maxPixels)", 0)
        let status = avcodec_open2(context, codec, &options)
        av_dict_free(&options)
        try check(status, "avcodec_open2(\(subject))")
    }

    deinit {
        var owned: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&owned)
    }

    /// The decoder's name, such as `h264` or `aac`.
    public var name: String { String(cString: context.pointee.codec.pointee.name) }

    /// Sends a packet, or nil to start draining (`avcodec_send_packet`).
    ///
    /// Returns false when the decoder is full and frames must be received first. Throws on
    /// undecodable data; the decoder stays usable, so a caller may warn and go on.
    public func send(_ packet: Packet?) throws(MediaError) -> Bool {
        let status = avcodec_send_packet(context, packet?.pointer)
        if status == cffmpeg_averror_eagain() { return false }
        if status == cffmpeg_averror_eof() { return true }
        try check(status, "avcodec_send_packet(\(subject))")
        return true
    }

    /// Receives the next decoded frame into `frame` (`avcodec_receive_frame`).
    public func receive(into frame: Frame) throws(MediaError) -> CodecStep {
        let status = avcodec_receive_frame(context, frame.pointer)
        if status == cffmpeg_averror_eagain() { return .needsInput }
        if status == cffmpeg_averror_eof() { return .endOfStream }
        try check(status, "avcodec_receive_frame(\(subject))")
        return .output
    }

    /// Drops buffered frames, as after a seek (`avcodec_flush_buffers`).
    public func flush() { avcodec_flush_buffers(context) }
}

@available(*, unavailable, message: "a Decoder is one C object with one owner")
extension Decoder: Sendable {}
