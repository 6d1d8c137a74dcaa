import MediaCore
import MediaFormats

/// What copying a video stream needs of its codec: the conversion of samples to Annex-B, the current
/// SPS and the picture size it declares, and the codec string.
protocol VideoAnnexBConversion {
    /// A conversion for a stream with `extradata` (a configuration record or Annex-B parameter sets).
    init(extradata: [UInt8]) throws(FormatError)
    /// One sample as Annex-B bytes, NAL unit ranges, and whether a segment may start there; nil when
    /// it holds no NAL unit.
    mutating func annexB(_ sample: UnsafeRawBufferPointer) throws(FormatError) -> (
        bytes: [UInt8], nalUnits: [Range<Int>], isRandomAccess: Bool
    )?
    /// One sample's NAL units without copying them, ordered as `annexB(_:)` orders them; nil when it
    /// holds no NAL unit.
    mutating func sampleUnits(_ sample: UnsafeRawBufferPointer) throws(FormatError) -> VideoSampleUnits?
    /// The CODECS value of the current SPS, once known.
    var codecString: String? { get }
    /// The current SPS, once known.
    var sequenceParameterSet: [UInt8]? { get }
    /// The coded picture size `sps` declares, or nil when this parser cannot read it.
    static func pictureSize(of sps: [UInt8]) -> (width: Int, height: Int)?
    /// The codec's name in messages: `H.264`, `HEVC`.
    static var codecName: String { get }
    /// The pictures a stream must start with, in messages: `IDR`, `IRAP`.
    static var randomAccessName: String { get }
}

extension H264AnnexBConverter: VideoAnnexBConversion {
    mutating func annexB(_ sample: UnsafeRawBufferPointer) throws(FormatError) -> (
        bytes: [UInt8], nalUnits: [Range<Int>], isRandomAccess: Bool
    )? {
        try convert(sample).map { ($0.bytes, $0.nalUnits, $0.containsIDR) }
    }
    static func pictureSize(of sps: [UInt8]) -> (width: Int, height: Int)? {
        (try? H264SequenceParameterSet(nal: sps)).map { ($0.width, $0.height) }
    }
    static var codecName: String { "H.264" }
    static var randomAccessName: String { "IDR" }
}

extension HEVCAnnexBConverter: VideoAnnexBConversion {
    mutating func annexB(_ sample: UnsafeRawBufferPointer) throws(FormatError) -> (
        bytes: [UInt8], nalUnits: [Range<Int>], isRandomAccess: Bool
    )? {
        try convert(sample).map { ($0.bytes, $0.nalUnits, $0.isRandomAccess) }
    }
    static func pictureSize(of sps: [UInt8]) -> (width: Int, height: Int)? {
        (try? HEVCSequenceParameterSet(sps)).map { ($0.width, $0.height) }
    }
    static var codecName: String { "HEVC" }
    static var randomAccessName: String { "IRAP" }
}

/// H.264 copied: Annex-B with AUD and in-band parameter sets.
typealias H264Producer = VideoCopyProducer<H264AnnexBConverter>
/// HEVC copied: Annex-B without AUDs, the parameter sets before each IRAP picture that lacks them.
typealias HEVCProducer = VideoCopyProducer<HEVCAnnexBConverter>

/// Video copied through its codec's Annex-B conversion, or for the fMP4 path (`samples`) handed on
/// as the demuxer's packet with its NAL units, which the CMAF sample builder reads in place; access
/// units before the first random access picture (IDR, IRAP) are dropped so the first segment starts
/// with one.
final class VideoCopyProducer<Conversion: VideoAnnexBConversion>: AccessUnitProducer {
    private var converter: Conversion
    private let samples: Bool
    private var mapper: TimestampMapper
    private var seenRandomAccess = false
    private var dropped = 0
    private let pictureLimit: PictureSizeLimit
    /// The SPS last checked against `pictureLimit`.
    private var checkedSPS: [UInt8]?

    init(
        stream: InputStreamDescription, timeBase: Rational, offset: Int64, pictureLimit: PictureSizeLimit,
        samples: Bool = false
    ) throws {
        converter = try Conversion(extradata: stream.extradata)
        self.samples = samples
        self.pictureLimit = pictureLimit
        let frame = stream.frameRate > 0 ? Int64(90_000 / stream.frameRate) : 3_000
        mapper = TimestampMapper(
            timeBase: (timeBase.numerator, timeBase.denominator), offset: offset, defaultDuration: frame)
        try checkPictureSize()
    }

    func accept(_ packet: Packet, into units: inout [AccessUnit]) throws {
        if samples {
            guard let sample = try packet.withUnsafeBytes({ raw throws(FormatError) in try converter.sampleUnits(raw) })
            else { return }
            guard try keep(isRandomAccess: sample.isRandomAccess) else { return }
            var unit = accessUnit(packet, bytes: [], nalUnits: [], isRandomAccess: sample.isRandomAccess)
            unit.packet = try packet.reference()
            unit.sample = sample
            units.append(unit)
            return
        }
        guard let converted = try packet.withUnsafeBytes({ raw throws(FormatError) in try converter.annexB(raw) })
        else { return }
        guard try keep(isRandomAccess: converted.isRandomAccess) else { return }
        units.append(
            accessUnit(
                packet, bytes: converted.bytes, nalUnits: converted.nalUnits, isRandomAccess: converted.isRandomAccess))
    }

    /// Checks a new SPS's picture size; false for a unit before the first random access picture, which
    /// is dropped.
    private func keep(isRandomAccess: Bool) throws(PackagingError) -> Bool {
        try checkPictureSize()
        if !seenRandomAccess {
            guard isRandomAccess else {
                dropped += 1
                return false
            }
            seenRandomAccess = true
        }
        return true
    }

    /// The access unit of `packet`'s timestamps with `bytes`.
    private func accessUnit(_ packet: Packet, bytes: [UInt8], nalUnits: [Range<Int>], isRandomAccess: Bool)
        -> AccessUnit
    {
        let time = mapper.map(pts: packet.optionalPTS, dts: packet.optionalDTS, duration: packet.duration)
        return AccessUnit(
            bytes: bytes, nalUnits: nalUnits, pts: time.pts, dts: time.dts, duration: time.duration,
            isRandomAccess: isRandomAccess)
    }

    func finish(into units: inout [AccessUnit]) throws {}

    /// Refuses a new SPS (from the extradata, or in band later) whose coded size is over the limit, since
    /// FFmpeg probed only the first and a player decoding the output would allocate for it. An SPS this
    /// parser cannot read is left to the decoders, which refuse it themselves.
    private func checkPictureSize() throws(PackagingError) {
        guard let sps = converter.sequenceParameterSet, sps != checkedSPS else { return }
        checkedSPS = sps
        guard let size = Conversion.pictureSize(of: sps),
            let refusal = pictureLimit.refusal(width: size.width, height: size.height)
        else { return }
        throw PackagingError(
            .unsupportedCodec,
            "the \(Conversion.codecName) SPS says \(refusal): pass --max-pixels to raise the limit if you trust it")
    }

    var codecString: String? { converter.codecString }
    var audioSetup: AudioSetupInformation? { nil }
    var droppedNotice: String? {
        dropped == 0
            ? nil
            : "dropped \(dropped) video frames before the first \(Conversion.randomAccessName) picture: "
                + "they cannot be decoded"
    }
}
