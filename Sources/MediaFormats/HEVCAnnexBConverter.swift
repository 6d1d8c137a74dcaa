/// One HEVC access unit in Annex-B form: every NAL unit after a 4-byte start code.
public struct HEVCAccessUnit: Sendable {
    /// The bytes, start codes included.
    public var bytes: [UInt8]
    /// Where each NAL unit (header included) lies in `bytes`.
    public var nalUnits: [Range<Int>]
    /// True when a slice of the unit is an IRAP picture (IDR, CRA or BLA): a segment may start here.
    public var isRandomAccess: Bool
}

/// Turns an HEVC stream's samples into Annex-B access units, from MP4 or Matroska (`hvcC` extradata,
/// length-prefixed NAL units) or MPEG-TS and raw streams (start codes, parameter sets in band).
///
/// Access unit delimiters are dropped; an IRAP unit that carries no parameter sets gets the latest
/// VPS, SPS and PPS put before its first slice, so every segment can start from its first picture.
public struct HEVCAnnexBConverter: Sendable {
    private var lengthSize: Int?
    /// The latest VPS, SPS and PPS (stored NAL units), each type in the order sent.
    public private(set) var parameterSets: [[UInt8]] = []

    /// A converter for a stream with `extradata`: an `hvcC` record, Annex-B parameter sets, or nothing.
    /// Throws `.malformed` for an `hvcC` that does not parse, naming the NAL unit that overruns it.
    public init(extradata: [UInt8]) throws(FormatError) {
        guard !extradata.isEmpty else { return }
        let annexB = extradata.withUnsafeBytes { NALUnitSplitter.startsWithStartCode($0) }
        if annexB {
            let ranges = extradata.withUnsafeBytes { NALUnitSplitter.annexB($0) }
            try take(ranges.map { Array(extradata[$0]) }, structure: "the HEVC extradata")
        } else {
            let record = try HEVCDecoderConfiguration(parsing: extradata, structure: "hvcC")
            lengthSize = record.lengthSize
            try take(record.nalUnits, structure: "hvcC")
        }
    }

    /// The CODECS value of the current SPS (`hvc1.…`), or nil before one is known.
    public var codecString: String? {
        guard let sps = sequenceParameterSet else { return nil }
        return (try? HEVCSequenceParameterSet(sps))?.profileTierLevel.codecString
    }

    /// The current SPS, or nil before one is known.
    public var sequenceParameterSet: [UInt8]? { parameterSets.first { Self.type($0) == HEVCNALHeader.sps } }

    /// Converts one sample, or returns nil when it holds no NAL unit.
    public mutating func convert(_ sample: UnsafeRawBufferPointer) throws(FormatError) -> HEVCAccessUnit? {
        guard let units = try sampleUnits(sample) else { return nil }
        var unit = HEVCAccessUnit(bytes: [], nalUnits: [], isRandomAccess: units.isRandomAccess)
        unit.bytes.reserveCapacity(sample.count + 64)
        func append(_ payload: UnsafeRawBufferPointer) {
            unit.bytes.append(contentsOf: H264AnnexBConverter.startCode)
            let start = unit.bytes.count
            unit.bytes.appendBytes(payload)
            unit.nalUnits.append(start..<unit.bytes.count)
        }
        for (index, range) in units.nalUnits.enumerated() {
            if index == units.parameterSetsBefore {
                for set in units.parameterSets { set.withUnsafeBytes { append($0) } }
            }
            append(UnsafeRawBufferPointer(rebasing: sample[range]))
        }
        return unit
    }

    /// The NAL units of one sample as `convert(_:)` orders them, without copying: their ranges in
    /// `sample` (AUDs left out), and for an IRAP picture without parameter sets in band the latest VPS,
    /// SPS and PPS, which go before its first VCL NAL unit. Nil when the sample holds no NAL unit.
    public mutating func sampleUnits(_ sample: UnsafeRawBufferPointer) throws(FormatError) -> VideoSampleUnits? {
        var ranges: [Range<Int>]
        if let lengthSize {
            // hvcC means length prefixes, whatever the first bytes look like.
            ranges = try NALUnitSplitter.lengthPrefixed(sample, lengthSize: lengthSize)
        } else {
            ranges = NALUnitSplitter.annexB(sample)
            if ranges.isEmpty && sample.count > 0 {
                throw FormatError("HEVC sample", "\(sample.count) bytes with no start code and no hvcC lengths")
            }
        }
        ranges = ranges.filter { !$0.isEmpty }
        guard !ranges.isEmpty else { return nil }
        var isRandomAccess = false
        var inBand: [[UInt8]] = []
        var kept: [Range<Int>] = []
        kept.reserveCapacity(ranges.count)
        var firstVCL: Int? = nil
        for (index, range) in ranges.enumerated() {
            let header = try HEVCNALHeader(
                UnsafeRawBufferPointer(rebasing: sample[range]), structure: "HEVC NAL unit \(index) of the sample")
            if header.isVCL && header.isIRAP { isRandomAccess = true }
            if header.isParameterSet {
                inBand.append(Array(sample[range]))
            }
            if header.type == HEVCNALHeader.accessUnitDelimiter { continue }
            if firstVCL == nil && header.type < 32 { firstVCL = kept.count }
            kept.append(range)
        }
        if !inBand.isEmpty { try take(inBand, structure: "the sample's parameter sets") }
        let insert = isRandomAccess && inBand.isEmpty && firstVCL != nil
        return VideoSampleUnits(
            nalUnits: kept, parameterSets: insert ? parameterSets : [], parameterSetsBefore: firstVCL ?? 0,
            isRandomAccess: isRandomAccess)
    }

    /// Replaces the known parameter sets of each type in `units` by those units, after checking they
    /// parse (an SPS or PPS GuardPlay refuses throws here, before anything is packaged).
    private mutating func take(_ units: [[UInt8]], structure: String) throws(FormatError) {
        var check = HEVCParameterSets()
        for (index, unit) in units.enumerated() {
            try check.add(unit, structure: "\(structure), NAL unit \(index)")
        }
        let types = Set(units.map(Self.type)).intersection(HEVCNALHeader.parameterSetTypes)
        let kept =
            parameterSets.filter { !types.contains(Self.type($0)) } + units.filter { types.contains(Self.type($0)) }
        parameterSets = HEVCNALHeader.parameterSetTypes.flatMap { type in kept.filter { Self.type($0) == type }
        }
    }

    private static func type(_ nal: [UInt8]) -> UInt8 { HEVCNALHeader.type(of: nal[0]) }
}
