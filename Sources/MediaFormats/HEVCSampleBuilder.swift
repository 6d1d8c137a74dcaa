/// The clear bytes of HEVC NAL units under CENC, from each slice segment's own header parse: the
/// parameter sets seen so far and the last independent slice segment, which a dependent one continues.
///
/// A VCL NAL unit keeps its 2-byte header and its whole `slice_segment_header()` clear, counted in
/// stored (escaped) bytes and rounded up to a byte; every other NAL unit is clear.
public struct HEVCClearLength: NALClearLength, Sendable {
    /// The parameter sets seen so far, by ID.
    public private(set) var parameterSets = HEVCParameterSets()
    private var previous: HEVCSliceSegmentHeader?

    /// A state that has seen no NAL unit.
    public init() {}

    /// The clear bytes of `nal` (stored bytes, header included, no length prefix); a parameter set is
    /// taken for the slices after it. Throws a `FormatError` naming `structure`: `.unsupported` for a
    /// stream GuardPlay refuses, `.malformed` for a header that does not parse.
    public mutating func clearBytes(of nal: [UInt8], structure: String) throws(FormatError) -> Int {
        let header = try HEVCNALHeader(nal, structure: structure)
        guard header.isVCL else {
            if header.isParameterSet {
                try parameterSets.add(nal, structure: structure)
            }
            return nal.count
        }
        return try sliceClearBytes(nal, structure: structure)
    }

    /// The clear bytes of the slice segment whose stored bytes (or their first part) are `bytes`; an
    /// independent segment becomes the one the next dependent segments continue.
    private mutating func sliceClearBytes(_ bytes: [UInt8], structure: String) throws(FormatError) -> Int {
        let slice = try HEVCSliceSegmentHeader(bytes, sets: parameterSets, previous: previous, structure: structure)
        if !slice.dependent { previous = slice }
        return slice.storedBytes
    }

    /// Stored bytes of a slice copied for the first parse: almost every slice segment header fits.
    static let firstTry = 128

    /// The clear bytes of `nal` in place. The HEVC parsers read arrays, so a slice's first `firstTry`
    /// bytes are copied and parsed with no error text made; what that cannot settle (a longer header,
    /// a NAL unit refused) is parsed again whole, naming `structure`, and gives the same answer or
    /// error as `clearBytes(of:structure:)` on an array. A parse that succeeds on a prefix succeeds
    /// alike on the whole: it reads nothing past the header, and its one check of the NAL unit's length
    /// (slice data must follow) passes for the whole when it passes for a part.
    public mutating func clearBytes(of nal: UnsafeRawBufferPointer, structure: @autoclosure () -> String)
        throws(FormatError) -> Int
    {
        try clearBytes(of: nal, firstTry: Self.firstTry, structure: structure())
    }

    /// `clearBytes(of:structure:)` with the first parse's copy cut at `firstTry` bytes (for tests).
    mutating func clearBytes(
        of nal: UnsafeRawBufferPointer, firstTry: Int, structure: @autoclosure () -> String
    ) throws(FormatError) -> Int {
        if let header = try? HEVCNALHeader(nal, structure: "") {
            if !header.isVCL && !header.isParameterSet { return nal.count }
            if header.isVCL, let clear = try? sliceClearBytes(Array(nal.prefix(firstTry)), structure: "") {
                return clear
            }
        }
        return try clearBytes(of: Array(nal), structure: structure())
    }
}

/// Turns the packager's Annex-B HEVC access units into CMAF samples: 4-byte NAL lengths, no access
/// unit delimiters, the first VPS, SPS and PPS moved to `hvcC` (repeats of them dropped; a stream
/// whose parameter sets change is refused, since `hvc1` marks the hvcC arrays complete), and for each NAL unit its stored size and clear bytes (`HEVCClearLength`).
///
/// The packager and the verifier run the same builder for their samples; the verifier's clear-length
/// check walks the written samples itself.
public struct HEVCSampleBuilder: Sendable, CMAFSampleBuilding {
    private var clear = HEVCClearLength()
    /// The VPS, SPS and PPS of the first access unit: the init segment's `hvcC`.
    public private(set) var configurationUnits: [[UInt8]] = []
    private var configured = false

    /// A builder that has seen no access unit yet.
    public init() {}

    /// Appends the sample of the NAL units at `nalUnits` of `bytes`, with `inserted` parameter sets put
    /// before `nalUnits[position]`, to `output`; returns, per NAL unit kept, its stored size and clear
    /// bytes. Errors name the NAL unit by its index and byte offset in the sample.
    public mutating func append(
        _ bytes: UnsafeRawBufferPointer, nalUnits: [Range<Int>], inserting inserted: [[UInt8]],
        before position: Int, to output: ByteBuffer
    ) throws(FormatError) -> [(size: Int, clear: Int)] {
        var units: [(size: Int, clear: Int)] = []
        units.reserveCapacity(nalUnits.count + inserted.count)
        try forEachNALUnit(bytes, nalUnits: nalUnits, inserting: inserted, before: position) {
            (raw, index, offset) throws(FormatError) in
            guard !raw.isEmpty else { return }
            let type = HEVCNALHeader.type(of: raw[0])
            if type == HEVCNALHeader.accessUnitDelimiter { return }
            // Made only for an error: most NAL units need no text.
            func structure() -> String {
                let place =
                    offset.map { "at byte \($0) of the access unit" } ?? "a parameter set repeated before the picture"
                return "HEVC NAL unit \(index) (type \(type), \(place))"
            }
            let clearBytes = try clear.clearBytes(of: raw, structure: structure())
            if HEVCNALHeader.parameterSetTypes.contains(type) {
                let nal = Array(raw)
                if !configured {
                    configurationUnits.append(nal)
                    return
                }
                if configurationUnits.contains(nal) { return }
                throw FormatError(
                    structure(),
                    "a parameter set that differs from the first access unit's: 'hvc1' carries every parameter set "
                        + "in hvcC, so a stream whose parameter sets change is not packaged",
                    kind: .unsupported)
            }
            output.appendLengthPrefixed(raw)
            units.append((4 + raw.count, 4 + clearBytes))
        }
        if !configured {
            let types = Set(configurationUnits.map { HEVCNALHeader.type(of: $0[0]) })
            guard types.count == 3 else {
                throw FormatError(
                    "HEVC access unit", "the first picture comes without a VPS, an SPS and a PPS", kind: .malformed)
            }
            configured = true
        }
        return units
    }

    /// The `hvcC` record of the first access unit's parameter sets, 4-byte NAL lengths.
    public func configuration() throws(FormatError) -> HEVCDecoderConfiguration {
        func first(_ type: UInt8) throws(FormatError) -> [UInt8] {
            guard let unit = configurationUnits.first(where: { HEVCNALHeader.type(of: $0[0]) == type }) else {
                throw FormatError("hvcC", "no parameter set of type \(type) was seen")
            }
            return unit
        }
        var record = try HEVCDecoderConfiguration(
            vps: try first(HEVCNALHeader.vps), sps: try first(HEVCNALHeader.sps), pps: try first(HEVCNALHeader.pps))
        record.nalUnits = configurationUnits
        return record
    }
}
