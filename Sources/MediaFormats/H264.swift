/// The parameter sets of an H.264 stream, from an MP4 `avcC` box or from Annex-B extradata.
public struct AVCConfiguration: Equatable, Sendable {
    /// Bytes in each NAL length prefix of the samples (1, 2 or 4), or nil when samples are Annex-B.
    public var nalLengthSize: Int?
    /// Sequence parameter sets, each an escaped NAL unit without start code.
    public var sequenceParameterSets: [[UInt8]]
    /// Picture parameter sets, each an escaped NAL unit without start code.
    public var pictureParameterSets: [[UInt8]]

    /// Creates a configuration from its parts.
    public init(nalLengthSize: Int?, sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]]) {
        self.nalLengthSize = nalLengthSize
        self.sequenceParameterSets = sequenceParameterSets
        self.pictureParameterSets = pictureParameterSets
    }

    /// Parses codec extradata: an `avcC` record (first byte 1) or Annex-B parameter sets; empty
    /// extradata means Annex-B samples that carry their own parameter sets.
    public init(extradata: [UInt8]) throws(FormatError) {
        if extradata.first == 1 {
            self = try AVCConfiguration.parseAVCC(extradata)
            return
        }
        var sps: [[UInt8]] = []
        var pps: [[UInt8]] = []
        extradata.withUnsafeBytes { raw in
            guard NALUnitSplitter.startsWithStartCode(raw) else { return }
            for range in NALUnitSplitter.annexB(raw) {
                let nal = Array(raw[range])
                switch NALUnitType.of(nal[0]) {
                case NALUnitType.sequenceParameterSet: sps.append(nal)
                case NALUnitType.pictureParameterSet: pps.append(nal)
                default: break
                }
            }
        }
        self.init(nalLengthSize: nil, sequenceParameterSets: sps, pictureParameterSets: pps)
    }

    private static func parseAVCC(_ bytes: [UInt8]) throws(FormatError) -> AVCConfiguration {
        let structure = "avcC"
        guard bytes.count >= 7 else { throw FormatError(structure, "only \(bytes.count) bytes, at least 7 expected") }
        let lengthSize = Int(bytes[4] & 0x03) + 1
        guard lengthSize != 3 else { throw FormatError(structure, "NAL length size of 3 bytes is not allowed") }
        var offset = 6  // after the header and the SPS count
        func readSets(count: Int) throws(FormatError) -> [[UInt8]] {
            var sets: [[UInt8]] = []
            for _ in 0..<count {
                guard offset + 2 <= bytes.count else { throw FormatError(structure, "parameter set list is cut short") }
                let length = Int(bytes.bigEndianUInt16(at: offset))
                offset += 2
                guard length > 0, offset + length <= bytes.count else {
                    throw FormatError(structure, "parameter set of \(length) bytes overruns the record")
                }
                sets.append(Array(bytes[offset..<(offset + length)]))
                offset += length
            }
            return sets
        }
        let sps = try readSets(count: Int(bytes[5] & 0x1F))
        guard offset < bytes.count else { throw FormatError(structure, "picture parameter set count is missing") }
        let ppsCount = Int(bytes[offset])
        offset += 1
        let pps = try readSets(count: ppsCount)
        return AVCConfiguration(nalLengthSize: lengthSize, sequenceParameterSets: sps, pictureParameterSets: pps)
    }

    /// The RFC 6381 codec string of the first SPS, `avc1.PPCCLL` (profile, constraint flags, level),
    /// or nil when there is no usable SPS.
    public var codecString: String? {
        guard let sps = sequenceParameterSets.first else { return nil }
        return H264CodecString.make(sps: sps)
    }
}

/// The `avc1.PPCCLL` codec string that HLS `CODECS` attributes carry.
public enum H264CodecString: Sendable {
    /// The codec string of an SPS NAL unit, or nil when it is too short.
    public static func make(sps: [UInt8]) -> String? {
        guard sps.count >= 4 else { return nil }
        return "avc1." + Array(sps[1...3]).hexString
    }
}

/// One H.264 access unit in Annex-B form: an AUD first, SPS and PPS before an IDR, 4-byte start codes.
public struct H264AccessUnit: Sendable {
    /// The Annex-B bytes.
    public var bytes: [UInt8]
    /// Where each NAL unit's payload (after its start code) lies in `bytes`.
    public var nalUnits: [Range<Int>]
    /// True when the access unit holds an IDR slice, so a segment may start here.
    public var containsIDR: Bool
}

/// Turns H.264 samples (length-prefixed from MP4, or Annex-B from TS and raw streams) into Annex-B
/// access units: an access unit delimiter first, the in-band SPS and PPS before every IDR picture.
///
/// Existing AUDs are dropped (one is written per access unit) and trailing zero bytes of NAL units are
/// trimmed; every other NAL unit is copied byte for byte.
public struct H264AnnexBConverter: Sendable {
    /// Start code written before every NAL unit.
    public static let startCode: [UInt8] = [0, 0, 0, 1]
    /// An access unit delimiter NAL unit: primary_pic_type 7 (any slice type) and the stop bit.
    public static let accessUnitDelimiter: [UInt8] = [0x09, 0xF0]

    private var configuration: AVCConfiguration

    /// A converter for a stream with `extradata` (avcC or Annex-B parameter sets).
    public init(extradata: [UInt8]) throws(FormatError) {
        configuration = try AVCConfiguration(extradata: extradata)
    }

    /// The codec string of the current SPS, or nil before one is known.
    public var codecString: String? { configuration.codecString }

    /// The current SPS (the first of the latest set), or nil before one is known.
    public var sequenceParameterSet: [UInt8]? { configuration.sequenceParameterSets.first }

    /// Converts one sample, or returns nil when it holds no NAL unit at all.
    public mutating func convert(_ sample: UnsafeRawBufferPointer) throws(FormatError) -> H264AccessUnit? {
        guard let units = try sampleUnits(sample) else { return nil }
        var unit = H264AccessUnit(bytes: [], nalUnits: [], containsIDR: units.isRandomAccess)
        unit.bytes.reserveCapacity(sample.count + 64 + (units.isRandomAccess ? 256 : 0))
        func append(_ payload: UnsafeRawBufferPointer) {
            unit.bytes.append(contentsOf: H264AnnexBConverter.startCode)
            let start = unit.bytes.count
            unit.bytes.appendBytes(payload)
            unit.nalUnits.append(start..<unit.bytes.count)
        }
        H264AnnexBConverter.accessUnitDelimiter.withUnsafeBytes { append($0) }
        for set in units.parameterSets { set.withUnsafeBytes { append($0) } }
        for range in units.nalUnits { append(UnsafeRawBufferPointer(rebasing: sample[range])) }
        return unit
    }

    /// The NAL units of one sample as `convert(_:)` orders them, without copying: their ranges in
    /// `sample` (trailing zeros trimmed, AUDs left out), and before an IDR picture the current SPS and
    /// PPS it lacks, which go first. Nil when the sample holds no NAL unit at all.
    public mutating func sampleUnits(_ sample: UnsafeRawBufferPointer) throws(FormatError) -> VideoSampleUnits? {
        let ranges: [Range<Int>]
        // An avcC record means length prefixes; a start-code check would misread a 4-byte length of
        // 256–511 (00 00 01 xx) as a start code.
        if let size = configuration.nalLengthSize {
            ranges = try NALUnitSplitter.lengthPrefixed(sample, lengthSize: size)
        } else {
            ranges = NALUnitSplitter.annexB(sample)
            if ranges.isEmpty && sample.count > 0 {
                throw FormatError("H.264 sample", "\(sample.count) bytes with no start code and no avcC lengths")
            }
        }
        var trimmed: [Range<Int>] = []
        trimmed.reserveCapacity(ranges.count)
        var hasSPS = false
        var hasPPS = false
        var containsIDR = false
        var inBandSPS: [[UInt8]] = []
        var inBandPPS: [[UInt8]] = []
        var any = false
        for range in ranges {
            var end = range.upperBound
            while end > range.lowerBound && sample[end - 1] == 0 { end -= 1 }
            guard end > range.lowerBound else { continue }
            any = true
            let nal = range.lowerBound..<end
            switch NALUnitType.of(sample[nal.lowerBound]) {
            case NALUnitType.sequenceParameterSet:
                hasSPS = true
                inBandSPS.append(Array(sample[nal]))
            case NALUnitType.pictureParameterSet:
                hasPPS = true
                inBandPPS.append(Array(sample[nal]))
            case NALUnitType.idrSlice: containsIDR = true
            case NALUnitType.accessUnitDelimiter: continue
            default: break
            }
            trimmed.append(nal)
        }
        guard any else { return nil }
        if !inBandSPS.isEmpty { configuration.sequenceParameterSets = inBandSPS }
        if !inBandPPS.isEmpty { configuration.pictureParameterSets = inBandPPS }
        var sets: [[UInt8]] = []
        if containsIDR {
            if !hasSPS { sets += configuration.sequenceParameterSets }
            if !hasPPS { sets += configuration.pictureParameterSets }
        }
        return VideoSampleUnits(
            nalUnits: trimmed, parameterSets: sets, parameterSetsBefore: 0, isRandomAccess: containsIDR)
    }
}

/// One video sample's NAL units as a converter orders them, without copying the sample: where each
/// lies in it, and the parameter sets the converter puts before one of them (a random access picture
/// that lacks them in band).
public struct VideoSampleUnits: Sendable {
    /// Where each NAL unit of the sample lies (header included, no start code or length).
    public var nalUnits: [Range<Int>]
    /// Parameter sets that go before `nalUnits[parameterSetsBefore]`; empty for most samples.
    public var parameterSets: [[UInt8]]
    /// The index in `nalUnits` the parameter sets go before.
    public var parameterSetsBefore: Int
    /// True when a segment may start here (an IDR or IRAP picture).
    public var isRandomAccess: Bool

    /// The units of a sample.
    public init(nalUnits: [Range<Int>], parameterSets: [[UInt8]], parameterSetsBefore: Int, isRandomAccess: Bool) {
        self.nalUnits = nalUnits
        self.parameterSets = parameterSets
        self.parameterSetsBefore = parameterSetsBefore
        self.isRandomAccess = isRandomAccess
    }
}
