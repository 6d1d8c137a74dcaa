import MediaCore
import MediaFormats

/// `--watermark ab`: the video decoded once and encoded twice with libx264, variant A with each
/// segment's `WatermarkPattern` added to the luma and variant B with it subtracted, every access unit
/// tagged with its variant.
///
/// Both encoders get the same settings and the same frames at the same times, and an IDR is forced on
/// the first frame of every segment (the frame the packager cuts at: the first at or after the target
/// duration) and nowhere else, with a fixed B-frame pattern, so the two variants have one GOP
/// structure, one set of timestamps and identical segment durations. x264 is deterministic for a given
/// thread count, which `encoderOptions` fixes, so the verifier can encode the variants again.
final class WatermarkProducer: AccessUnitProducer {
    /// The libx264 options of both variants (`threads` fixed so that the output does not depend on the
    /// machine): keyframes only where forced, no scene cuts, a fixed B-frame pattern, closed GOPs.
    static let encoderOptions: [String: String] = [
        "preset": "veryfast", "crf": "18", "threads": "4", "forced-idr": "1",
        "x264-params": "keyint=infinite:scenecut=0:b-adapt=0:bframes=2:open-gop=0",
    ]

    private let decoder: Decoder
    private let pattern: WatermarkPattern
    private let target: Int64
    private let frame = Frame()
    private let offset: Int64
    private let clock: TimestampMapper
    private var mappers: [WatermarkVariant: TimestampMapper]
    private var converters: [WatermarkVariant: H264AnnexBConverter] = [
        .a: try! H264AnnexBConverter(extradata: []), .b: try! H264AnnexBConverter(extradata: []),
    ]
    private var encoders: (a: Encoder, b: Encoder)?
    private var pictures: (a: Frame, b: Frame)?
    private var scaler: Scaler?
    private var segment = -1
    private var segmentStart: Int64 = 0
    private var signs: [Int8] = []
    private var lastPTS: Int64?
    private let frameRate: Rational

    /// A producer for `stream`, cutting segments of `segmentDuration` seconds as the packager does.
    init(
        input: InputContext, stream: InputStreamDescription, timeBase: Rational, offset: Int64,
        pattern: WatermarkPattern, segmentDuration: Double
    ) throws {
        decoder = try input.makeDecoder(streamIndex: stream.index)
        self.pattern = pattern
        self.offset = offset
        target = Int64((segmentDuration * 90_000).rounded())
        let base = (timeBase.numerator, timeBase.denominator)
        clock = TimestampMapper(timeBase: base, offset: offset, defaultDuration: 3_000)
        let fps = stream.frameRate > 0 && stream.frameRate < 1_000 ? stream.frameRate : 25
        frameRate = Rational(Int32((fps * 1_000).rounded()), 1_000)
        let frameTicks = Int64((90_000 / fps).rounded())
        mappers = [
            .a: TimestampMapper(timeBase: base, offset: offset, defaultDuration: frameTicks),
            .b: TimestampMapper(timeBase: base, offset: offset, defaultDuration: frameTicks),
        ]
    }

    func accept(_ packet: Packet, into units: inout [AccessUnit]) throws {
        try decoder.feed(packet) { try drainDecoder(into: &units) }
    }

    func finish(into units: inout [AccessUnit]) throws {
        try decoder.feed(nil) { try drainDecoder(into: &units) }
        guard let encoders else { return }
        try encoders.a.encode(nil) { packet in try self.emit(packet, .a, into: &units) }
        try encoders.b.encode(nil) { packet in try self.emit(packet, .b, into: &units) }
    }

    private func drainDecoder(into units: inout [AccessUnit]) throws {
        while try decoder.receive(into: frame) == .output {
            defer { frame.reset() }
            try encode(frame, into: &units)
        }
    }

    private func encode(_ decoded: Frame, into units: inout [AccessUnit]) throws {
        let source: Frame
        if decoded.pixelFormat == .yuv420p && !decoded.isFullRange {
            source = decoded
        } else {
            let converter = scaler ?? Scaler(width: decoded.width, height: decoded.height, pixelFormat: .yuv420p)
            scaler = converter
            source = try converter.scale(decoded)
        }
        let (a, b) = try prepare(width: source.width, height: source.height)
        // Strictly increasing timestamps, as the encoder needs; a missing one follows the last.
        var pts = decoded.pts == noTimestamp ? (lastPTS ?? -1) + 1 : decoded.pts
        if let last = lastPTS, pts <= last { pts = last + 1 }
        lastPTS = pts
        let time = clock.rescale(pts) + offset
        // The cut rule of both packaging runs, with their tolerance.
        let startsSegment = segment < 0 || time - segmentStart >= target - PackagingJob.cutTolerance
        if startsSegment {
            segment += 1
            segmentStart = time
            let grid = WatermarkPattern.grid(width: source.width, height: source.height)
            signs = pattern.signs(segment: segment, columns: grid.columns, rows: grid.rows)
        }
        try a.makeWritable()
        try b.makeWritable()
        source.withUnsafeMutablePlanes { from in
            a.withUnsafeMutablePlanes { plus in
                b.withUnsafeMutablePlanes { minus in
                    let columns = WatermarkPattern.grid(width: source.width, height: source.height).columns
                    WatermarkPattern.apply(
                        signs: signs, columns: columns, source: from[0], plus: plus[0], minus: minus[0])
                    for index in 1..<min(from.count, 3) {
                        for row in 0..<from[index].rows {
                            let bytes = from[index].rowBytes
                            (plus[index].base + row * plus[index].linesize).update(
                                from: from[index].base + row * from[index].linesize, count: bytes)
                            (minus[index].base + row * minus[index].linesize).update(
                                from: from[index].base + row * from[index].linesize, count: bytes)
                        }
                    }
                }
            }
        }
        a.pts = pts
        b.pts = pts
        let encoders = try encoders(width: source.width, height: source.height)
        try encoders.a.encode(a, forceKeyFrame: startsSegment) { packet in try self.emit(packet, .a, into: &units) }
        try encoders.b.encode(b, forceKeyFrame: startsSegment) { packet in try self.emit(packet, .b, into: &units) }
    }

    /// The two pictures the variants are drawn into, made at the first frame's size.
    private func prepare(width: Int, height: Int) throws -> (Frame, Frame) {
        if let pictures {
            guard pictures.a.width == width, pictures.a.height == height else {
                throw PackagingError(
                    .unsupportedCodec,
                    "the video changes size from \(pictures.a.width)×\(pictures.a.height) to \(width)×\(height) "
                        + "mid-stream, which --watermark cannot encode as one stream")
            }
            return pictures
        }
        let made = (
            try Frame(width: width, height: height, pixelFormat: .yuv420p),
            try Frame(width: width, height: height, pixelFormat: .yuv420p)
        )
        pictures = made
        return made
    }

    private func encoders(width: Int, height: Int) throws -> (a: Encoder, b: Encoder) {
        if let encoders { return encoders }
        var settings = EncoderSettings(
            codecName: "libx264",
            media: .video(width: width, height: height, pixelFormat: .yuv420p, frameRate: frameRate))
        settings.timeBase = decoder.timeBase
        settings.options = WatermarkProducer.encoderOptions
        let made = (a: try Encoder(settings: settings), b: try Encoder(settings: settings))
        encoders = made
        return made
    }

    private func emit(_ packet: Packet, _ variant: WatermarkVariant, into units: inout [AccessUnit]) throws {
        guard
            let unit = try packet.withUnsafeBytes({ raw throws(FormatError) in try converters[variant]!.convert(raw) })
        else { return }
        let time = mappers[variant]!.map(pts: packet.optionalPTS, dts: packet.optionalDTS, duration: packet.duration)
        var made = AccessUnit(
            bytes: unit.bytes, nalUnits: unit.nalUnits, pts: time.pts, dts: time.dts, duration: time.duration,
            isRandomAccess: unit.containsIDR)
        made.variant = variant
        units.append(made)
    }

    var codecString: String? { converters[.a]!.codecString }
    var audioSetup: AudioSetupInformation? { nil }
    var droppedNotice: String? { nil }
}
