import CFFmpeg

/// Owner of a muxer: an `AVFormatContext` from `avformat_alloc_output_context2`, its file closed with
/// `avio_closep` and the context freed with `avformat_free_context` in `deinit`.
public final class OutputContext {
    let context: UnsafeMutablePointer<AVFormatContext>
    private var timeBases: [Rational] = []
    private var opened = false
    private var finished = false
    /// Where the bytes go.
    public let path: String

    /// Prepares to write `path`, with the container chosen from `formatName` or, when nil, from the
    /// extension of `namedLike` (defaults to `path`), so a temporary file can take its final name's
    /// format.
    public init(path: String, formatName: String? = nil, namedLike: String? = nil) throws(MediaError) {
        var created: UnsafeMutablePointer<AVFormatContext>? = nil
        let status = avformat_alloc_output_context2(&created, nil, formatName, namedLike ?? path)
        guard status >= 0, let created else {
            throw MediaError(
                operation: "avformat_alloc_output_context2(\(namedLike ?? path))",
                message: "no container format for this file name; use .wav, .flac, .m4a, .mkv or .mp4",
                kind: .unsupported)
        }
        context = created
        self.path = path
    }

    deinit {
        if opened && !finished, context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            avio_closep(&context.pointee.pb)
        }
        avformat_free_context(context)
    }

    /// The muxer's short name, such as `matroska` or `wav`.
    public var formatName: String { String(cString: context.pointee.oformat.pointee.name) }

    /// True when encoders must put their headers in extradata (`AVFMT_GLOBALHEADER`).
    public var needsGlobalHeader: Bool { context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 }

    /// Adds a stream described by an opened encoder and returns its index (`avformat_new_stream`).
    @discardableResult
    public func addStream(for encoder: Encoder) throws(MediaError) -> Int {
        guard let stream = avformat_new_stream(context, nil) else {
            throw MediaError(operation: "avformat_new_stream(\(path))", message: "out of memory")
        }
        try check(
            avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context), "avcodec_parameters_from_context"
        )
        stream.pointee.time_base = encoder.timeBase.av
        timeBases.append(encoder.timeBase)
        return Int(stream.pointee.index)
    }

    /// Sets a container-level metadata tag.
    public func setMetadata(_ key: String, _ value: String) {
        av_dict_set(&context.pointee.metadata, key, value, 0)
    }

    /// Opens the file and writes the header (`avio_open`, `avformat_write_header`).
    public func open() throws(MediaError) {
        if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            try check(avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE), "avio_open(\(path))")
        }
        opened = true
        try check(avformat_write_header(context, nil), "avformat_write_header(\(path))")
    }

    /// Writes `packet` to stream `index`, rescaling from `timeBase`, interleaved by dts
    /// (`av_interleaved_write_frame`, which takes the payload and leaves the packet blank).
    public func write(_ packet: Packet, stream index: Int, from timeBase: Rational) throws(MediaError) {
        guard let stream = context.pointee.streams[index] else { return }
        packet.streamIndex = index
        packet.rescaleTimestamps(from: timeBase, to: Rational(stream.pointee.time_base))
        try check(av_interleaved_write_frame(context, packet.pointer), "av_interleaved_write_frame(\(path))")
    }

    /// Writes the trailer and closes the file (`av_write_trailer`, `avio_closep`).
    public func finish() throws(MediaError) {
        guard opened, !finished else { return }
        finished = true
        let status = av_write_trailer(context)
        if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            avio_closep(&context.pointee.pb)
        }
        try check(status, "av_write_trailer(\(path))")
    }
}

@available(*, unavailable, message: "an OutputContext is one C object with one owner")
extension OutputContext: Sendable {}
