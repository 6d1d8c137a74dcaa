import MediaCore
import MediaFormats
import Protection

/// Audio that SAMPLE-AES cannot carry (MP3, Opus, FLAC, PCM…) decoded and encoded again as AAC-LC with
/// FFmpeg's native encoder, which is deterministic: the verifier runs the same conversion and compares
/// bytes.
final class AACTranscodeProducer: AccessUnitProducer {
    /// The bit rate for `channels` channels: 64 kb/s each, at most 384 kb/s.
    static func bitRate(channels: Int) -> Int64 { Int64(min(64_000 * channels, 384_000)) }

    /// The sample rate the AAC stream gets: the source's when AAC has an index for it, else 48 kHz.
    static func sampleRate(for source: Int) -> Int {
        aacSamplingFrequencies.contains(source) ? source : 48_000
    }

    private let decoder: Decoder
    private let encoder: Encoder
    private let resampler: Resampler
    private let frame = Frame()
    private let outputRate: Rational
    private var mapper: TimestampMapper
    private var firstPTS: Int64?
    private var samples: Int64 = 0
    private let config: AudioSpecificConfig

    init(input: InputContext, stream: InputStreamDescription, offset: Int64) throws {
        decoder = try input.makeDecoder(streamIndex: stream.index, threads: 1)
        let rate = AACTranscodeProducer.sampleRate(for: stream.sampleRate)
        let channels = min(max(stream.channelCount, 1), 8)
        var settings = EncoderSettings(
            codecName: "aac", media: .audio(sampleRate: rate, channelCount: channels, sampleFormat: nil))
        settings.bitRate = AACTranscodeProducer.bitRate(channels: channels)
        settings.globalHeader = true
        encoder = try Encoder(settings: settings)
        resampler = Resampler(output: encoder.audioFormat)
        outputRate = Rational(1, Int32(rate))
        config = try AudioSpecificConfig(encoder.extradata)
        mapper = TimestampMapper(
            timeBase: (1, Int32(rate)), offset: offset, defaultDuration: Int64(1024 * 90_000 / rate))
    }

    func accept(_ packet: Packet, into units: inout [AccessUnit]) throws {
        try decoder.feed(packet) { try drainDecoder(into: &units) }
    }

    func finish(into units: inout [AccessUnit]) throws {
        try decoder.feed(nil) { try drainDecoder(into: &units) }
        if let rest = try resampler.drain() { try encode(rest, into: &units) }
        try encoder.encode(nil) { packet in try self.emit(packet, into: &units) }
    }

    private func drainDecoder(into units: inout [AccessUnit]) throws {
        while try decoder.receive(into: frame) == .output {
            if firstPTS == nil {
                let pts = frame.pts == noTimestamp ? 0 : frame.pts
                firstPTS = decoder.timeBase.rescale(pts, to: outputRate)
            }
            let converted = try resampler.convert(frame)
            frame.reset()
            try encode(converted, into: &units)
        }
    }

    private func encode(_ converted: Frame, into units: inout [AccessUnit]) throws {
        guard converted.sampleCount > 0 else { return }
        converted.pts = (firstPTS ?? 0) + samples
        samples += Int64(converted.sampleCount)
        try encoder.encode(converted) { packet in try self.emit(packet, into: &units) }
    }

    private func emit(_ packet: Packet, into units: inout [AccessUnit]) throws {
        var bytes = try config.adtsHeader(payloadLength: packet.size)
        packet.withUnsafeBytes { bytes.appendBytes($0) }
        let time = mapper.map(pts: packet.optionalPTS, dts: packet.optionalDTS, duration: packet.duration)
        units.append(
            AccessUnit(
                bytes: bytes, nalUnits: [], pts: time.pts, dts: time.pts, duration: time.duration,
                isRandomAccess: true))
    }

    var codecString: String? { config.codecString }
    var audioSetup: AudioSetupInformation? {
        AudioSetupInformation(audioType: config.sampleAESAudioType, setupData: config.bytes)
    }
    var droppedNotice: String? { nil }
}

/// A still image encoded as `frameCount` frames of H.264 at 25 fps with libx264, an IDR at every
/// segment boundary; x264's output does not depend on threading, so the verifier can encode it again.
///
/// With `--flicker` it is 60 fps instead, alternating the two phases of `StillFlicker` with a fresh mask
/// at every IDR (`flickerOptions` says which settings keep the phases apart).
///
/// The frames are encoded as they are asked for (`continueOutput`), a few at a time, so an hour of
/// video made from a still is never held in memory at once.
final class StillImageProducer: AccessUnitProducer {
    /// Frames per second of the video made from a still.
    static let frameRate: Int32 = 25
    /// The most frames a still becomes: 3600 s, the longest `--still-duration`.
    static let maximumFrames = 3_600 * Int(frameRate)
    /// The largest width and height of a still image the packager encodes (4096, DCI 4K's width).
    static let maximumDimension = 4_096

    /// The refusal for a still image of `width`×`height`, or nil when it is small enough.
    static func sizeRefusal(width: Int, height: Int) -> PackagingError? {
        guard width > maximumDimension || height > maximumDimension else { return nil }
        return PackagingError(
            .unsupportedCodec,
            "the still image is \(width)×\(height) pixels; GuardPlay makes video of at most "
                + "\(maximumDimension)×\(maximumDimension) from a still: scale it down first (ffmpeg -i IN -vf "
                + "scale=\(maximumDimension):\(maximumDimension):force_original_aspect_ratio=decrease OUT.png)")
    }

    private let decoder: Decoder
    private let frameCount: Int
    private let gop: Int
    private let flicker: FlickerArea?
    private let frame = Frame()
    private var converter = try! H264AnnexBConverter(extradata: [])
    private var mapper: TimestampMapper
    private var decoded = false
    /// While frames remain to be encoded: the encoder and the picture it is given again and again.
    private var encoding: (encoder: Encoder, picture: Frame)?
    /// With `--flicker`: the phase maker and the current pair, drawn anew at every IDR.
    private var phases: (maker: StillFlicker, pair: (Frame, Frame))?
    private var framesSubmitted = 0

    /// A producer of `frameCount` frames with an IDR every `gop`; `flicker` makes them the phases of a
    /// flickering still over that area, at `StillFlicker.frameRate` with `gop` rounded up to even.
    init(input: InputContext, stream: InputStreamDescription, frameCount: Int, gop: Int, flicker: FlickerArea? = nil)
        throws
    {
        decoder = try input.makeDecoder(streamIndex: stream.index, threads: 1)
        let rate = flicker == nil ? StillImageProducer.frameRate : StillFlicker.frameRate
        self.frameCount = min(max(frameCount, 1), 3_600 * Int(rate))
        // A pair never straddles an IDR, where the mask changes.
        self.gop = flicker == nil ? max(gop, 1) : max(gop + (gop & 1), 2)
        self.flicker = flicker
        mapper = TimestampMapper(
            timeBase: (1, rate), offset: TimestampMapper.startOffset, defaultDuration: Int64(90_000 / rate))
    }

    /// The libx264 options of a flickering still, for an IDR every `gop` frames. What keeps the phases
    /// apart: no B-frames (a B-frame's bi-prediction averages a phase with its complement, which is the
    /// whole picture, and each one costs an intra frame's bits), at least two references so a phase is
    /// predicted from the same phase two frames back (after the first pair of a GOP every frame is a
    /// near-empty P-frame), no scene cut (each phase change looks like one), and a constant quality
    /// (CRF 14) rather than a bit rate: at a low bit rate x264 quantises the random mask's high
    /// frequencies away and a frame decodes to a grey blur of both phases.
    static func flickerOptions(gop: Int) -> [String: String] {
        [
            "preset": "medium", "tune": "stillimage", "crf": "14", "threads": "1",
            "x264-params": "keyint=\(gop):min-keyint=\(gop):scenecut=0:open-gop=0:bframes=0:ref=2",
        ]
    }

    func accept(_ packet: Packet, into units: inout [AccessUnit]) throws {
        guard !decoded else { return }
        _ = try decoder.send(packet)
        if try decoder.receive(into: frame) == .output { try startEncoding(into: &units) }
    }

    func finish(into units: inout [AccessUnit]) throws {
        guard !decoded else { return }
        _ = try decoder.send(nil)
        guard try decoder.receive(into: frame) == .output else {
            throw FormatError("still image", "the image could not be decoded")
        }
        try startEncoding(into: &units)
    }

    var hasPendingOutput: Bool { encoding != nil }

    /// Encodes frames until at least one access unit comes out (x264 holds its lookahead first), and
    /// after the last frame drains the encoder and lets go of it.
    func continueOutput(into units: inout [AccessUnit]) throws {
        guard let (encoder, still) = encoding else { return }
        let before = units.count
        while units.count == before && framesSubmitted < frameCount {
            let picture = try flickerPicture(framesSubmitted) ?? still
            picture.pts = Int64(framesSubmitted)
            framesSubmitted += 1
            try encoder.encode(picture) { packet in try self.emit(packet, into: &units) }
        }
        if framesSubmitted == frameCount {
            try encoder.encode(nil) { packet in try self.emit(packet, into: &units) }
            encoding = nil
        }
    }

    /// Frame `index`'s phase of a flickering still (a new pair at every IDR), or nil without `--flicker`.
    private func flickerPicture(_ index: Int) throws -> Frame? {
        guard let (maker, oldPair) = phases else { return nil }
        var pair = oldPair
        if index % gop == 0 {
            var generator = SystemRandomNumberGenerator()
            pair = try maker.pair(using: &generator)
            phases = (maker, pair)
        }
        return index % 2 == 0 ? pair.0 : pair.1
    }

    private func startEncoding(into units: inout [AccessUnit]) throws {
        decoded = true
        // The container may not have said the size before decoding.
        if let refusal = StillImageProducer.sizeRefusal(width: frame.width, height: frame.height) { throw refusal }
        let width = max(frame.width & ~1, 2)
        let height = max(frame.height & ~1, 2)
        let picture = try Scaler(width: width, height: height, pixelFormat: .yuv420p).scale(frame)
        frame.reset()
        if let flicker {
            let maker = try StillFlicker(picture: picture, area: flicker)
            phases = (maker, (picture, picture))
        }
        var settings = EncoderSettings(
            codecName: "libx264",
            media: .video(
                width: width, height: height, pixelFormat: .yuv420p,
                frameRate: Rational(flicker == nil ? StillImageProducer.frameRate : StillFlicker.frameRate, 1)))
        settings.gopSize = gop
        settings.options =
            flicker == nil
            ? [
                "preset": "medium", "tune": "stillimage", "crf": "18", "threads": "1",
                "x264-params": "keyint=\(gop):min-keyint=\(gop):scenecut=0:open-gop=0",
            ] : StillImageProducer.flickerOptions(gop: gop)
        encoding = (try Encoder(settings: settings), picture)
        try continueOutput(into: &units)
    }

    private func emit(_ packet: Packet, into units: inout [AccessUnit]) throws {
        guard let unit = try packet.withUnsafeBytes({ raw throws(FormatError) in try converter.convert(raw) }) else {
            return
        }
        let time = mapper.map(pts: packet.optionalPTS, dts: packet.optionalDTS, duration: packet.duration)
        units.append(
            AccessUnit(
                bytes: unit.bytes, nalUnits: unit.nalUnits, pts: time.pts, dts: time.dts, duration: time.duration,
                isRandomAccess: unit.containsIDR))
    }

    var codecString: String? { converter.codecString }
    var audioSetup: AudioSetupInformation? { nil }
    var droppedNotice: String? { nil }
}
