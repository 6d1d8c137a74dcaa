import MediaCore
import MediaFormats

/// HEVC copied: Annex-B without access unit delimiters, with the parameter sets before each IRAP
/// picture that lacks them; access units before the first IRAP picture are dropped so the first
/// segment starts with one.
final class HEVCProducer: AccessUnitProducer {
    private var converter: HEVCAnnexBConverter
    private var mapper: TimestampMapper
    private var seenIRAP = false
    private var dropped = 0
    private let pictureLimit: PictureSizeLimit
    /// The SPS last checked against `pictureLimit`.
    private var checkedSPS: [UInt8]?

    init(stream: InputStreamDescription, timeBase: Rational, offset: Int64, pictureLimit: PictureSizeLimit) throws {
        converter = try HEVCAnnexBConverter(extradata: stream.extradata)
        self.pictureLimit = pictureLimit
        let frame = stream.frameRate > 0 ? Int64(90_000 / stream.frameRate) : 3_000
        mapper = TimestampMapper(
            timeBase: (timeBase.numerator, timeBase.denominator), offset: offset, defaultDuration: frame)
        try checkPictureSize()
    }

    func accept(_ packet: Packet, into units: inout [AccessUnit]) throws {
        guard let unit = try packet.withUnsafeBytes({ raw throws(FormatError) in try converter.convert(raw) }) else {
            return
        }
        try checkPictureSize()
        if !seenIRAP {
            guard unit.isRandomAccess else {
                dropped += 1
                return
            }
            seenIRAP = true
        }
        let time = mapper.map(pts: packet.optionalPTS, dts: packet.optionalDTS, duration: packet.duration)
        units.append(
            AccessUnit(
                bytes: unit.bytes, nalUnits: unit.nalUnits, pts: time.pts, dts: time.dts, duration: time.duration,
                isRandomAccess: unit.isRandomAccess))
    }

    func finish(into units: inout [AccessUnit]) throws {}

    /// Refuses a new SPS whose picture is over the limit, as `H264Producer` does.
    private func checkPictureSize() throws(PackagingError) {
        guard let sps = converter.sequenceParameterSet, sps != checkedSPS else { return }
        checkedSPS = sps
        guard let size = try? HEVCSequenceParameterSet(sps),
            let refusal = pictureLimit.refusal(width: size.width, height: size.height)
        else { return }
        throw PackagingError(
            .unsupportedCodec, "the HEVC SPS says \(refusal): pass --max-pixels to raise the limit if you trust it")
    }

    var codecString: String? { converter.codecString }
    var audioSetup: AudioSetupInformation? { nil }
    var droppedNotice: String? {
        dropped == 0 ? nil : "dropped \(dropped) video frames before the first IRAP picture: they cannot be decoded"
    }
}
