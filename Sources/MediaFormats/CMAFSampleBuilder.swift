/// A codec's conversion of the packager's video samples into CMAF samples.
public protocol CMAFSampleBuilding {
    /// Appends the sample of the NAL units at `nalUnits` of `bytes`, with `parameterSets` put before
    /// `nalUnits[position]`, to `output`; returns, per NAL unit kept, its stored size and clear bytes.
    /// `bytes` may be Annex-B or length-prefixed: only the ranges are read.
    mutating func append(
        _ bytes: UnsafeRawBufferPointer, nalUnits: [Range<Int>], inserting parameterSets: [[UInt8]],
        before position: Int, to output: ByteBuffer
    ) throws(FormatError) -> [(size: Int, clear: Int)]
}

extension CMAFSampleBuilding {
    /// Appends the sample of the NAL units at `nalUnits` of `bytes` to `output`; returns, per NAL unit
    /// kept, its stored size and clear bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer, nalUnits: [Range<Int>], to output: ByteBuffer)
        throws(FormatError) -> [(size: Int, clear: Int)]
    {
        try append(bytes, nalUnits: nalUnits, inserting: [], before: 0, to: output)
    }

    /// Appends the sample `units` describes in `sample` (a converter's `sampleUnits(_:)`) to `output`.
    public mutating func append(_ sample: UnsafeRawBufferPointer, units: VideoSampleUnits, to output: ByteBuffer)
        throws(FormatError) -> [(size: Int, clear: Int)]
    {
        try append(
            sample, nalUnits: units.nalUnits, inserting: units.parameterSets, before: units.parameterSetsBefore,
            to: output)
    }

    /// The sample of `unit` (Annex-B bytes and NAL ranges) and, per NAL unit kept, its stored size and
    /// clear bytes.
    public mutating func sample(bytes: [UInt8], nalUnits: [Range<Int>]) throws(FormatError) -> (
        bytes: [UInt8], units: [(size: Int, clear: Int)]
    ) {
        let sample = ByteBuffer(capacity: bytes.count)
        let units = try bytes.withBytes { raw throws(FormatError) in
            try append(raw, nalUnits: nalUnits, to: sample)
        }
        return (sample.bytes, units)
    }
}

/// Calls `body` with each NAL unit of a sample in order, the parameter sets inserted before
/// `nalUnits[position]` (or last, when `position` is past the end) included; `body` gets the unit, its
/// index in that order and its offset in `bytes` (nil for an inserted parameter set).
func forEachNALUnit(
    _ bytes: UnsafeRawBufferPointer, nalUnits: [Range<Int>], inserting parameterSets: [[UInt8]], before position: Int,
    _ body: (UnsafeRawBufferPointer, Int, Int?) throws(FormatError) -> Void
) throws(FormatError) {
    var index = 0
    func inserted() throws(FormatError) {
        for set in parameterSets {
            try set.withBytes { raw throws(FormatError) in try body(raw, index, nil) }
            index += 1
        }
    }
    for (at, range) in nalUnits.enumerated() {
        if at == position { try inserted() }
        try body(UnsafeRawBufferPointer(rebasing: bytes[range]), index, range.lowerBound)
        index += 1
    }
    if position >= nalUnits.count { try inserted() }
}

/// The clear bytes of a codec's NAL units under CENC, one NAL unit at a time in stream order, from
/// each slice's own header parse: the packager's builders, `verify` and the fuzz oracle share it.
public protocol NALClearLength {
    /// The clear bytes of `nal` (stored bytes, header included, no length prefix); a parameter set is
    /// taken for the slices after it. Throws a `FormatError` naming `structure` for a NAL unit that
    /// does not parse or that GuardPlay refuses; H.264 makes that text only then.
    mutating func clearBytes(of nal: UnsafeRawBufferPointer, structure: @autoclosure () -> String)
        throws(FormatError) -> Int
}

extension NALClearLength {
    /// The clear bytes of `nal`, as `clearBytes(of:structure:)` for bytes in place.
    public mutating func clearBytes(of nal: [UInt8], structure: String) throws(FormatError) -> Int {
        try nal.withBytes { raw throws(FormatError) in try clearBytes(of: raw, structure: structure) }
    }
}

/// The clear bytes of H.264 NAL units under CENC: a slice keeps its NAL header and its whole
/// `slice_header()` clear, counted in stored (escaped) bytes and rounded up to a byte; every other NAL
/// unit is clear. Data partitioning, SVC and MVC NAL units are refused, since the clear ranges here are
/// those of plain slices.
public struct H264ClearLength: NALClearLength {
    /// The parameter sets seen so far, by ID.
    public private(set) var parameterSets = H264SliceHeader.ParameterSets()

    /// A state that has seen no NAL unit.
    public init() {}

    /// The clear bytes of `nal`; `structure` is made only for an error, so the packager's and the
    /// verifier's per-NAL path formats no text.
    public mutating func clearBytes(of nal: UnsafeRawBufferPointer, structure: @autoclosure () -> String)
        throws(FormatError) -> Int
    {
        guard let first = nal.first else { return 0 }
        let type = NALUnitType.of(first)
        switch type {
        case NALUnitType.nonIDRSlice, NALUnitType.idrSlice:
            return try H264SliceHeader(nal: nal, parameterSets: parameterSets).storedLength
        case NALUnitType.sequenceParameterSet, NALUnitType.pictureParameterSet:
            try parameterSets.take(Array(nal))
        case 2, 3, 4, 14, 15, 20, 21:
            throw FormatError(
                structure(),
                "type \(type) (data partitioning, SVC or MVC) is not packaged: CENC's clear ranges are defined "
                    + "here for plain slices only", kind: .unsupported)
        default:
            break
        }
        return nal.count
    }
}

/// Turns the packager's Annex-B H.264 access units into CMAF samples: 4-byte NAL lengths, no access
/// unit delimiters, the first parameter sets moved to `avcC` (later ones that differ kept in band), and
/// for each NAL unit the bytes that stay clear under CENC, from its own slice-header parse.
///
/// The packager and the verifier run the same builder, so the verifier's expected samples come from
/// exactly the conversion the packager applied; the verifier's slice-header check is separate.
public struct H264SampleBuilder: CMAFSampleBuilding {
    private var clearLength = H264ClearLength()
    /// The SPS and PPS of the first access unit: the init segment's `avcC`.
    public private(set) var sequenceParameterSets: [[UInt8]] = []
    public private(set) var pictureParameterSets: [[UInt8]] = []
    private var configured = false

    /// A builder that has seen no access unit yet.
    public init() {}

    /// Appends the sample of the NAL units at `nalUnits` of `bytes`, with `inserted` parameter sets put
    /// before `nalUnits[position]`, to `output`; returns, per NAL unit kept, its stored size and clear
    /// bytes.
    public mutating func append(
        _ bytes: UnsafeRawBufferPointer, nalUnits: [Range<Int>], inserting inserted: [[UInt8]],
        before position: Int, to output: ByteBuffer
    ) throws(FormatError) -> [(size: Int, clear: Int)] {
        var units: [(size: Int, clear: Int)] = []
        units.reserveCapacity(nalUnits.count + inserted.count)
        try forEachNALUnit(bytes, nalUnits: nalUnits, inserting: inserted, before: position) {
            (nal, index, _) throws(FormatError) in
            guard !nal.isEmpty else { return }
            let type = NALUnitType.of(nal[0])
            if type == NALUnitType.accessUnitDelimiter { return }
            let clear = try clearLength.clearBytes(of: nal, structure: "H.264 NAL unit \(index)")
            if type == NALUnitType.sequenceParameterSet || type == NALUnitType.pictureParameterSet {
                let set = Array(nal)
                if !configured {
                    if type == NALUnitType.sequenceParameterSet {
                        sequenceParameterSets.append(set)
                    } else {
                        pictureParameterSets.append(set)
                    }
                    return
                }
                if sequenceParameterSets.contains(set) || pictureParameterSets.contains(set) { return }
            }
            output.appendLengthPrefixed(nal)
            units.append((4 + nal.count, 4 + clear))
        }
        if !configured {
            guard !sequenceParameterSets.isEmpty, !pictureParameterSets.isEmpty else {
                throw FormatError("H.264 access unit", "the first picture comes without an SPS and a PPS")
            }
            configured = true
        }
        return units
    }
}

/// Raw AAC frames from the packager's ADTS access units: each frame's header dropped.
public enum AACSampleBuilder {
    /// The raw frames of the ADTS frames in `bytes`.
    public static func samples(_ bytes: [UInt8]) throws(FormatError) -> [[UInt8]] {
        try frames(bytes).map { Array(bytes[$0]) }
    }

    /// Where the raw frames of the ADTS frames in `bytes` lie.
    public static func frames(_ bytes: [UInt8]) throws(FormatError) -> [Range<Int>] {
        let frames = try bytes.withBytes { raw throws(FormatError) in try ADTSHeader.frames(in: raw) }
        return frames.map { ($0.frame.lowerBound + $0.header)..<$0.frame.upperBound }
    }
}
