import CFFmpeg

/// Owner of a `SwrContext` (`swr_alloc_set_opts2`, freed with `swr_free` in `deinit`) that converts
/// decoded audio to one fixed output format, reconfiguring itself when the input format changes.
public final class Resampler {
    private var context: OpaquePointer?
    private var inputFormat: AudioFormat?
    /// The format every converted frame has.
    public let output: AudioFormat

    /// Creates a resampler producing `output`.
    public init(output: AudioFormat) {
        self.output = output
    }

    deinit { swr_free(&context) }

    /// True when converting `format` to the output changes no sample value, only the layout of
    /// planes (or nothing at all).
    public func isExact(for format: AudioFormat) -> Bool {
        format.sampleRate == output.sampleRate && format.channelCount == output.channelCount
            && format.sampleFormat.packed == output.sampleFormat.packed
    }

    /// Converts `input` and returns a new frame in the output format (`swr_convert`). The result may
    /// hold fewer samples than the input while the resampler fills its delay line.
    public func convert(_ input: Frame) throws(MediaError) -> Frame {
        try configure(for: input)
        let capacity = Int(swr_get_out_samples(context, input.pointer.pointee.nb_samples)) + 32
        let result = try Frame(sampleCount: capacity, format: output)
        let converted = result.pointer.pointee.extended_data.withMemoryRebound(
            to: UnsafeMutablePointer<UInt8>?.self, capacity: 8
        ) { outPlanes in
            input.pointer.pointee.extended_data.withMemoryRebound(
                to: UnsafePointer<UInt8>?.self, capacity: 8
            ) { inPlanes in
                swr_convert(context, outPlanes, Int32(capacity), inPlanes, input.pointer.pointee.nb_samples)
            }
        }
        try check(converted, "swr_convert")
        result.setSampleCount(Int(converted))
        return result
    }

    /// Returns the samples still held in the delay line, or nil when there are none (`swr_convert`
    /// with no input).
    public func drain() throws(MediaError) -> Frame? {
        guard context != nil else { return nil }
        let capacity = Int(swr_get_out_samples(context, 0)) + 32
        let result = try Frame(sampleCount: capacity, format: output)
        let converted = result.pointer.pointee.extended_data.withMemoryRebound(
            to: UnsafeMutablePointer<UInt8>?.self, capacity: 8
        ) { outPlanes in
            swr_convert(context, outPlanes, Int32(capacity), nil, 0)
        }
        try check(converted, "swr_convert(drain)")
        guard converted > 0 else { return nil }
        result.setSampleCount(Int(converted))
        return result
    }

    private func configure(for input: Frame) throws(MediaError) {
        let format = input.audioFormat
        if context != nil, format == inputFormat { return }
        swr_free(&context)
        var inLayout = AVChannelLayout()
        if input.pointer.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
            av_channel_layout_default(&inLayout, Int32(format.channelCount))
        } else {
            av_channel_layout_copy(&inLayout, &input.pointer.pointee.ch_layout)
        }
        defer { av_channel_layout_uninit(&inLayout) }
        var outLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, Int32(output.channelCount))
        defer { av_channel_layout_uninit(&outLayout) }
        try check(
            swr_alloc_set_opts2(
                &context, &outLayout, output.sampleFormat.raw, Int32(output.sampleRate),
                &inLayout, format.sampleFormat.raw, Int32(format.sampleRate), 0, nil),
            "swr_alloc_set_opts2(\(format) → \(output))")
        try check(swr_init(context), "swr_init(\(format) → \(output))")
        inputFormat = format
    }
}

@available(*, unavailable, message: "a Resampler is one C object with one owner")
extension Resampler: Sendable {}
