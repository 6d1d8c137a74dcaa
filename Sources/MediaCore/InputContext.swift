import CFFmpeg

/// What reading the next packet produced.
public enum ReadStep: Sendable, Equatable {
    /// The packet was filled.
    case packet
    /// The input has no more packets.
    case endOfStream
}

/// Owner of a demuxer: an `AVFormatContext` opened with `avformat_open_input`, closed with
/// `avformat_close_input` in `deinit`.
public final class InputContext {
    let context: UnsafeMutablePointer<AVFormatContext>
    /// The path it was opened from.
    public let path: String
    /// The streams, copied out when the input was opened.
    public let streams: [StreamInfo]
    /// What can interrupt its blocking reads, kept as long as the context that calls it back.
    private let interruption: InputInterruption?

    /// The largest picture a decoder of this input may allocate.
    public let pictureLimit: PictureSizeLimit

    /// Opens `path` and reads enough to know its streams (`avformat_open_input`,
    /// `avformat_find_stream_info`); `options` are demuxer options, such as the HLS demuxer's
    /// `allowed_extensions`. With `interruption`, its `interrupt()` makes blocking reads fail at once.
    ///
    /// The decoders that probing opens get libavcodec's `max_pixels` from `pictureLimit`, so a hostile
    /// header cannot make them allocate; a video stream over the limit then throws `.pictureTooLarge`, and
    /// one whose size could not be decoded `.undecodablePicture`. A file that starts as a known format but
    /// fails to open throws `.truncated` (see `classifyOpenFailure`).
    public init(
        path: String, options: [String: String] = [:], interruption: InputInterruption? = nil,
        pictureLimit: PictureSizeLimit = .standard
    ) throws(MediaError) {
        var opened: UnsafeMutablePointer<AVFormatContext>? = nil
        if let interruption {
            // avformat_open_input frees a context it was given when it fails.
            guard let allocated = avformat_alloc_context() else {
                throw MediaError(operation: "avformat_alloc_context", message: "out of memory")
            }
            allocated.pointee.interrupt_callback = interruption.callback
            opened = allocated
        }
        var dictionary: OpaquePointer? = nil
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        let openStatus = avformat_open_input(&opened, path, nil, &dictionary)
        av_dict_free(&dictionary)
        if openStatus < 0 {
            throw InputContext.classifyOpenFailure(
                MediaError(code: openStatus, operation: "avformat_open_input(\(path))"), path: path)
        }
        guard let opened else {
            throw MediaError(operation: "avformat_open_input(\(path))", message: "no context returned")
        }
        // One codec-option dictionary per stream known now (FFmpeg reads no more than that many).
        let count = Int(opened.pointee.nb_streams)
        let codecOptions = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: max(count, 1))
        codecOptions.initialize(repeating: nil, count: max(count, 1))
        for index in 0..<count { av_dict_set(&codecOptions[index], "max_pixels", "\(pictureLimit.maxPixels)", 0) }
        let status = avformat_find_stream_info(opened, count > 0 ? codecOptions : nil)
        for index in 0..<max(count, 1) { av_dict_free(&codecOptions[index]) }
        codecOptions.deallocate()
        if status < 0 {
            var owned: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&owned)
            throw InputContext.classifyOpenFailure(
                MediaError(code: status, operation: "avformat_find_stream_info(\(path))"), path: path)
        }
        self.context = opened
        self.path = path
        self.interruption = interruption
        self.pictureLimit = pictureLimit
        var streams: [StreamInfo] = []
        for index in 0..<Int(opened.pointee.nb_streams) {
            if let stream = opened.pointee.streams[index] { streams.append(StreamInfo(stream)) }
        }
        self.streams = streams
        for stream in streams where stream.mediaType == .video && !stream.isAttachedPicture {
            if let refusal = pictureLimit.refusal(width: stream.width, height: stream.height) {
                throw MediaError(
                    operation: "video stream \(stream.index)", message: refusal, kind: .pictureTooLarge)
            }
            if stream.width <= 0 || stream.height <= 0 {
                throw MediaError(
                    operation: "video stream \(stream.index)",
                    message:
                        "its picture size cannot be decoded (\(stream.codecName) header damaged, or claiming a "
                        + "size FFmpeg refuses)",
                    kind: .undecodablePicture)
            }
        }
    }

    /// The one classification of a failed open that every command shares: a file whose content FFmpeg
    /// recognises (probe score 50 or more) or that is laid out as MPEG-TS packets (a sync byte every 188
    /// bytes, such as a file holding only a PAT), yet fails to open, is truncated or damaged in its index;
    /// other invalid data is in no format FFmpeg knows.
    public static func classifyOpenFailure(_ error: MediaError, path: String) -> MediaError {
        guard error.kind == .invalidData || error.kind == .other || error.kind == .io else { return error }
        let local = path.hasPrefix("file:") ? String(path.dropFirst(5)) : path
        let recognised = probeContent(path: local).map { $0.score >= 50 } ?? false
        guard recognised || isTransportStreamLayout(path: local) else { return error }
        return error.reclassified(as: .truncated)
    }

    /// True when the file at `path` starts with whole MPEG-TS packets: a sync byte (0x47) at every 188th
    /// byte of its first 8 packets, or of all of them when it holds fewer.
    static func isTransportStreamLayout(path: String) -> Bool {
        guard let file = fopen(path, "rb") else { return false }
        defer { fclose(file) }
        var head = [UInt8](repeating: 0, count: 188 * 8)
        let count = head.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        guard count >= 188 else { return false }
        return stride(from: 0, to: count - count % 188, by: 188).allSatisfy { head[$0] == 0x47 }
    }

    deinit {
        var owned: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&owned)
    }

    /// The demuxer's short name, such as `mov,mp4,m4a,3gp,3g2,mj2` or `mpegts`.
    public var formatName: String { context.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "" }

    /// The container's duration in seconds, or nil when unknown.
    public var durationSeconds: Double? {
        let duration = context.pointee.duration
        return duration == cffmpeg_nopts_value() || duration <= 0 ? nil : Double(duration) / 1_000_000
    }

    /// The container's start time in seconds, or 0 when unknown.
    public var startSeconds: Double {
        let start = context.pointee.start_time
        return start == cffmpeg_nopts_value() ? 0 : Double(start) / 1_000_000
    }

    /// Where media time 0 lies, in seconds of the container's clock: the earliest presentation start of
    /// an audio or video stream (see `StreamInfo.presentationStart`), so 0 is the first sample or picture
    /// a user is shown; the container's start time when no stream says.
    public var presentationStartSeconds: Double {
        let starts = streams.compactMap { stream -> Double? in
            guard stream.mediaType == .audio || stream.mediaType == .video, !stream.isAttachedPicture,
                let start = stream.presentationStart
            else { return nil }
            return Double(start) * stream.timeBase.doubleValue
        }
        return starts.min() ?? startSeconds
    }

    /// The container's overall bit rate in bits per second, or 0 when unknown.
    public var bitRate: Int64 { context.pointee.bit_rate }

    /// The index of the stream FFmpeg considers best for `type` (`av_find_best_stream`), or nil.
    public func bestStream(_ type: MediaType) -> Int? {
        let avType: AVMediaType = type == .audio ? AVMEDIA_TYPE_AUDIO : AVMEDIA_TYPE_VIDEO
        let index = av_find_best_stream(context, avType, -1, -1, nil, 0)
        guard index >= 0, !streams[Int(index)].isAttachedPicture else {
            return streams.first { $0.mediaType == type && !$0.isAttachedPicture }?.index
        }
        return Int(index)
    }

    /// Reads the next packet into `packet` (`av_read_frame`); the previous payload is released first.
    public func read(into packet: Packet) throws(MediaError) -> ReadStep {
        packet.reset()
        let status = av_read_frame(context, packet.pointer)
        if status == cffmpeg_averror_eof() { return .endOfStream }
        try check(status, "av_read_frame(\(path))")
        return .packet
    }

    /// Seeks so that the next packets start at or before `seconds` (`avformat_seek_file`). A target beyond
    /// what `AV_TIME_BASE` microseconds can count is clamped (FFmpeg then seeks to the end).
    public func seek(toSeconds seconds: Double) throws(MediaError) {
        let target = Int64(roundingAndClamping: seconds * 1_000_000)
        try check(
            avformat_seek_file(context, -1, Int64.min, target, target, 0),
            "avformat_seek_file(\(path), \(seconds)s)")
    }

    /// True when the underlying file has been read to its end (`avio_feof`), which tells a truncated
    /// file (an error at the end of the data) from damage in the middle.
    public var isAtEndOfFile: Bool {
        guard let io = context.pointee.pb else { return false }
        return avio_feof(io) != 0
    }

    /// The size of the input file in bytes (`avio_size`), or nil when unknown.
    public var fileSize: Int64? {
        guard let io = context.pointee.pb else { return nil }
        let size = avio_size(io)
        return size < 0 ? nil : size
    }

    /// Tells the demuxer to skip every stream not in `indices` (`AVStream.discard = AVDISCARD_ALL`), so
    /// `read(into:)` returns packets only of streams someone decodes.
    public func discardStreams(except indices: Set<Int>) {
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index] else { continue }
            stream.pointee.discard = indices.contains(index) ? AVDISCARD_DEFAULT : AVDISCARD_ALL
        }
    }

    /// Recognises a container from the first bytes of `path` alone, ignoring its name
    /// (`av_probe_input_format3`); returns FFmpeg's format name and probe score (0–100), or nil when no
    /// format claims the content.
    public static func probeContent(path: String, bytes: Int = 1 << 16) -> (formatName: String, score: Int)? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        let padding = Int(AVPROBE_PADDING_SIZE)
        var buffer = [UInt8](repeating: 0, count: bytes + padding)
        let count = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, bytes, file) }
        guard count > 0 else { return nil }
        var score: Int32 = 0
        let format = buffer.withUnsafeMutableBufferPointer { pointer -> UnsafePointer<AVInputFormat>? in
            var probe = AVProbeData()
            probe.buf = pointer.baseAddress
            probe.buf_size = Int32(count)
            probe.filename = nil
            return av_probe_input_format3(&probe, 1, &score)
        }
        guard let format else { return nil }
        return (String(cString: format.pointee.name), Int(score))
    }

    /// Opens a decoder for stream `index` from its codec parameters.
    public func makeDecoder(streamIndex index: Int, threads: Int = 0) throws(MediaError) -> Decoder {
        guard index >= 0, index < Int(context.pointee.nb_streams), let stream = context.pointee.streams[index] else {
            throw MediaError(operation: "makeDecoder(\(path))", message: "no stream \(index)")
        }
        return try Decoder(
            parameters: stream.pointee.codecpar, timeBase: Rational(stream.pointee.time_base),
            threads: threads, maxPixels: pictureLimit.maxPixels, subject: "\(path)#\(index)")
    }
}

@available(*, unavailable, message: "an InputContext is one C object with one owner")
extension InputContext: Sendable {}
