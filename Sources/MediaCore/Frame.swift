import CFFmpeg

/// One plane of a picture or of planar audio, valid only inside the closure that receives it.
public struct PlaneBuffer {
    /// The first byte of the plane.
    public let base: UnsafeMutablePointer<UInt8>
    /// Bytes from one row to the next (may exceed `rowBytes`, and is the whole size for audio).
    public let linesize: Int
    /// Bytes of picture data in one row.
    public let rowBytes: Int
    /// Rows in the plane (1 for audio).
    public let rows: Int

    /// Calls `body` with row `row` as a mutable buffer of `rowBytes` bytes.
    public func withRow<R>(_ row: Int, _ body: (UnsafeMutableBufferPointer<UInt8>) throws -> R) rethrows -> R {
        precondition(row >= 0 && row < rows, "row \(row) outside 0..<\(rows)")
        return try body(UnsafeMutableBufferPointer(start: base + row * linesize, count: rowBytes))
    }
}

/// Owner of one `AVFrame` (`av_frame_alloc`, freed with `av_frame_free` in `deinit`).
///
/// A frame holds either audio samples or a picture. Decoders and resamplers fill it; a frame is reused
/// after `reset()`.
public final class Frame {
    let pointer: UnsafeMutablePointer<AVFrame>

    /// Allocates an empty frame.
    public init() {
        guard let pointer = av_frame_alloc() else { fatalError("av_frame_alloc: out of memory") }
        self.pointer = pointer
    }

    deinit {
        var owned: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&owned)
    }

    /// Allocates a picture of the given size and format with fresh buffers (`av_frame_get_buffer`).
    public convenience init(width: Int, height: Int, pixelFormat: PixelFormat) throws(MediaError) {
        self.init()
        pointer.pointee.width = Int32(width)
        pointer.pointee.height = Int32(height)
        pointer.pointee.format = pixelFormat.raw.rawValue
        try check(av_frame_get_buffer(pointer, 0), "av_frame_get_buffer(\(width)x\(height) \(pixelFormat))")
    }

    /// Allocates room for `sampleCount` samples in `format` (`av_frame_get_buffer`).
    public convenience init(sampleCount: Int, format: AudioFormat) throws(MediaError) {
        self.init()
        pointer.pointee.nb_samples = Int32(sampleCount)
        pointer.pointee.sample_rate = Int32(format.sampleRate)
        pointer.pointee.format = format.sampleFormat.raw.rawValue
        av_channel_layout_default(&pointer.pointee.ch_layout, Int32(format.channelCount))
        try check(av_frame_get_buffer(pointer, 0), "av_frame_get_buffer(\(sampleCount) samples, \(format))")
    }

    /// A new frame referencing the same buffers (`av_frame_clone`); write to it only after
    /// `makeWritable()`.
    public func clone() -> Frame {
        let copy = Frame()
        guard av_frame_ref(copy.pointer, pointer) >= 0 else { fatalError("av_frame_ref: out of memory") }
        return copy
    }

    /// Drops the buffers and resets the fields (`av_frame_unref`).
    public func reset() { av_frame_unref(pointer) }

    /// Ensures the buffers are this frame's alone, copying them if shared (`av_frame_make_writable`).
    public func makeWritable() throws(MediaError) {
        try check(av_frame_make_writable(pointer), "av_frame_make_writable")
    }

    /// The best presentation timestamp in the time base of the stream it came from, or `noTimestamp`.
    public var pts: Int64 {
        get {
            let best = pointer.pointee.best_effort_timestamp
            return best != cffmpeg_nopts_value() ? best : pointer.pointee.pts
        }
        set {
            pointer.pointee.pts = newValue
            pointer.pointee.best_effort_timestamp = newValue
        }
    }

    /// The frame's duration in its stream's time base, or 0 when unknown.
    public var duration: Int64 { pointer.pointee.pkt_duration }

    /// True when the decoder flagged the frame as damaged.
    public var isCorrupt: Bool {
        pointer.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 || pointer.pointee.decode_error_flags != 0
    }

    // MARK: Video

    /// Picture width in pixels.
    public var width: Int { Int(pointer.pointee.width) }
    /// Picture height in pixels.
    public var height: Int { Int(pointer.pointee.height) }
    /// The picture's pixel format.
    public var pixelFormat: PixelFormat { PixelFormat(AVPixelFormat(pointer.pointee.format)) }
    /// True when the luma range is full (0–255) rather than limited (16–235).
    public var isFullRange: Bool { pointer.pointee.color_range == AVCOL_RANGE_JPEG || pixelFormat.isJPEGRange }
    /// The shape of one pixel (`sample_aspect_ratio`), or 0/1 when unknown (square).
    public var sampleAspectRatio: Rational {
        Rational(pointer.pointee.sample_aspect_ratio.num, pointer.pointee.sample_aspect_ratio.den)
    }
    /// True when the frame is a key frame.
    public var isKeyframe: Bool { pointer.pointee.key_frame != 0 }

    /// Calls `body` with the picture's planes; call `makeWritable()` first if the frame may be shared.
    public func withUnsafeMutablePlanes<R>(_ body: ([PlaneBuffer]) throws -> R) rethrows -> R {
        let format = pixelFormat
        var planes: [PlaneBuffer] = []
        for index in 0..<format.planeCount {
            guard let base = dataPointer(index) else { break }
            let chroma = !format.isRGB && (index == 1 || index == 2)
            let planeHeight = chroma ? -((-height) >> format.log2ChromaHeight) : height
            let rowBytes = Int(av_image_get_linesize(format.raw, Int32(width), Int32(index)))
            planes.append(
                PlaneBuffer(base: base, linesize: Int(linesize(index)), rowBytes: rowBytes, rows: planeHeight))
        }
        return try body(planes)
    }

    // MARK: Audio

    /// Samples per channel in this frame.
    public var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    /// Audio sample rate in Hz.
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    /// Audio channel count.
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    /// The audio sample format.
    public var sampleFormat: SampleFormat { SampleFormat(AVSampleFormat(pointer.pointee.format)) }
    /// The audio format of this frame.
    public var audioFormat: AudioFormat {
        AudioFormat(sampleRate: sampleRate, channelCount: channelCount, sampleFormat: sampleFormat)
    }

    /// Calls `body` with one plane per channel (planar formats) or one interleaved plane.
    public func withUnsafeMutableAudioPlanes<R>(_ body: ([PlaneBuffer]) throws -> R) rethrows -> R {
        let format = sampleFormat
        let planeCount = format.isPlanar ? channelCount : 1
        let bytes = sampleCount * format.bytesPerSample * (format.isPlanar ? 1 : channelCount)
        var planes: [PlaneBuffer] = []
        for index in 0..<planeCount {
            guard let base = audioDataPointer(index) else { break }
            planes.append(PlaneBuffer(base: base, linesize: bytes, rowBytes: bytes, rows: 1))
        }
        return try body(planes)
    }

    /// Sets how many samples of the allocated buffer are valid (never more than allocated).
    public func setSampleCount(_ count: Int) {
        pointer.pointee.nb_samples = Int32(count)
    }

    private func dataPointer(_ index: Int) -> UnsafeMutablePointer<UInt8>? {
        withUnsafePointer(to: pointer.pointee.data) { tuple in
            tuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { $0[index] }
        }
    }

    private func audioDataPointer(_ index: Int) -> UnsafeMutablePointer<UInt8>? {
        guard let planes = pointer.pointee.extended_data else { return nil }
        return planes[index]
    }

    private func linesize(_ index: Int) -> Int32 {
        withUnsafePointer(to: pointer.pointee.linesize) { tuple in
            tuple.withMemoryRebound(to: Int32.self, capacity: 8) { $0[index] }
        }
    }
}

@available(*, unavailable, message: "a Frame is one C object with one owner")
extension Frame: Sendable {}
