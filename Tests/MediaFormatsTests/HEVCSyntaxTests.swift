import Testing

@testable import MediaFormats

/// Writes RBSP syntax elements as H.265 §7.2 defines them, for streams libx265 never makes.
private struct SyntaxWriter {
    private var writer = BitWriter()

    mutating func u(_ value: Int, _ bits: Int) { writer.write(UInt32(truncatingIfNeeded: value), bits: bits) }
    mutating func flag(_ value: Bool) { u(value ? 1 : 0, 1) }
    mutating func ue(_ value: Int) { writer.writeUnsignedExpGolomb(value) }
    mutating func se(_ value: Int) { writer.writeSignedExpGolomb(value) }

    /// A one bit and zero bits to the byte boundary: `rbsp_trailing_bits()` and `byte_alignment()`.
    mutating func align() {
        u(1, 1)
        while writer.bitCount % 8 != 0 { u(0, 1) }
    }

    /// The NAL unit of `type`: header, then the escaped RBSP.
    func nal(_ type: UInt8, appending payload: [UInt8] = []) -> [UInt8] {
        [type << 1, 1] + EmulationPrevention.escaped(writer.bytes + payload)
    }

    /// A Main profile `profile_tier_level` with no sub-layers, level 3.1.
    mutating func profileTierLevel() {
        u(0, 2)
        flag(false)
        u(1, 5)
        u(0x6000_0000, 32)
        u(0b1001, 4)  // progressive, not interlaced, not non-packed, frame only
        u(0, 32)
        u(0, 12)
        u(93, 8)
    }
}

/// The SPS of the hand-written stream: 256x128, 16x16 CTBs, three short-term sets (the second predicted
/// from the first), two long-term candidates; `extensions` is the byte of `sps_range_extension_flag` to
/// `sps_extension_4bits`.
private func handWrittenSPS(chromaFormat: Int = 1, separatePlanes: Bool = false, extensions: Int = 0) -> [UInt8] {
    var sps = SyntaxWriter()
    sps.u(0, 4)
    sps.u(0, 3)
    sps.flag(true)
    sps.profileTierLevel()
    sps.ue(0)
    sps.ue(chromaFormat)
    if chromaFormat == 3 { sps.flag(separatePlanes) }
    for value in [256, 128] { sps.ue(value) }
    sps.flag(false)
    for value in [0, 0, 4] { sps.ue(value) }  // 8-bit, 8 POC LSB bits
    sps.flag(true)
    for value in [6, 2, 0] { sps.ue(value) }
    for value in [0, 1, 0, 2, 1, 1] { sps.ue(value) }  // 16x16 CTBs: 16x8 = 128
    sps.flag(false)  // no scaling lists
    sps.flag(true)  // amp
    sps.flag(true)  // SAO
    sps.flag(false)  // PCM
    sps.ue(3)  // three short-term sets
    // Set 0: -1 and -3 used, +2 not.
    sps.ue(2)
    sps.ue(1)
    sps.ue(0)
    sps.flag(true)
    sps.ue(1)
    sps.flag(true)
    sps.ue(1)
    sps.flag(false)
    // Set 1, predicted from set 0 with deltaRps -1: S0 -1 -2 -4 (used, used, not), S1 +1 (used).
    sps.flag(true)
    sps.flag(true)
    sps.ue(0)
    for (used, useDelta) in [(true, true), (false, true), (true, true), (true, true)] {
        sps.flag(used)
        if !used { sps.flag(useDelta) }
    }
    // Set 2: -1 used.
    sps.flag(false)
    sps.ue(1)
    sps.ue(0)
    sps.ue(0)
    sps.flag(true)
    sps.flag(true)  // long-term pictures
    sps.ue(2)
    sps.u(10, 8)
    sps.flag(true)
    sps.u(20, 8)
    sps.flag(false)
    sps.flag(true)  // temporal MVP
    sps.flag(false)
    sps.flag(false)  // no VUI
    sps.flag(extensions != 0)
    if extensions != 0 { sps.u(extensions, 8) }
    if extensions & 0x80 != 0 { sps.u(0, 9) }
    sps.align()
    return sps.nal(HEVCNALHeader.sps)

}

/// A hand-written stream with everything libx265 never writes: tiles with explicit sizes and wavefronts
/// together, reference picture sets predicted from others in the SPS and in a slice header, long-term
/// pictures from the SPS and the slice, list modification, weighted prediction with chroma, extra slice
/// header bits, output flags, a dependent slice segment, deblocking overrides, chroma QP offset lists,
/// and a slice header extension whose bytes need emulation prevention.
private func handWrittenStream() -> [[UInt8]] {
    var vps = SyntaxWriter()
    vps.u(0, 4)
    vps.u(0b11, 2)
    vps.u(0, 6)
    vps.u(0, 3)
    vps.flag(true)
    vps.u(0xFFFF, 16)
    vps.profileTierLevel()
    vps.flag(true)
    for value in [6, 2, 0] { vps.ue(value) }
    vps.u(0, 6)
    vps.ue(0)
    vps.flag(false)
    vps.flag(false)
    vps.align()

    var pps = SyntaxWriter()
    pps.ue(0)
    pps.ue(0)
    pps.flag(true)  // dependent slice segments
    pps.flag(true)  // output flag present
    pps.u(2, 3)  // two extra slice header bits
    pps.flag(false)
    pps.flag(true)  // cabac_init_present
    pps.ue(1)  // two L0 references by default
    pps.ue(0)  // one L1 reference
    pps.se(0)
    pps.flag(false)
    pps.flag(true)  // transform skip
    pps.flag(true)
    pps.ue(1)
    pps.se(0)
    pps.se(0)
    pps.flag(true)  // slice chroma QP offsets
    pps.flag(true)  // weighted prediction
    pps.flag(true)  // weighted biprediction
    pps.flag(false)
    pps.flag(true)  // tiles
    pps.flag(true)  // wavefronts
    pps.ue(1)
    pps.ue(1)
    pps.flag(false)  // explicit sizes
    pps.ue(7)
    pps.ue(3)
    pps.flag(true)
    pps.flag(true)  // loop filter across slices
    pps.flag(true)  // deblocking control
    pps.flag(true)  // override enabled
    pps.flag(false)
    pps.se(0)
    pps.se(0)
    pps.flag(false)
    pps.flag(true)  // lists modification
    pps.ue(0)
    pps.flag(true)  // slice header extension
    pps.flag(true)  // PPS extensions: range only
    pps.u(0b1000, 4)
    pps.u(0, 4)
    pps.ue(0)
    pps.flag(false)
    pps.flag(true)  // chroma QP offset list
    pps.ue(0)
    pps.ue(0)
    pps.se(1)
    pps.se(1)
    pps.ue(0)
    pps.ue(0)
    pps.align()

    let data: [UInt8] = [0x80, 0x11, 0x22, 0x33, 0x44, 0x55]

    var idr = SyntaxWriter()
    idr.flag(true)
    idr.flag(false)
    idr.ue(0)
    idr.u(0, 2)
    idr.ue(2)  // I
    idr.flag(true)
    idr.flag(true)
    idr.flag(true)  // SAO luma and chroma
    idr.se(0)
    idr.se(0)
    idr.se(0)
    idr.flag(false)
    idr.flag(false)  // no deblocking override
    idr.flag(true)
    idr.ue(0)  // no entry points
    idr.ue(1)
    idr.u(0, 8)
    idr.align()

    var b = SyntaxWriter()
    b.flag(true)
    b.ue(0)
    b.u(0b01, 2)
    b.ue(0)  // B
    b.flag(true)
    b.u(5, 8)
    b.flag(true)  // set from the SPS
    b.u(1, 2)
    b.ue(1)  // one long-term picture from the SPS
    b.ue(1)  // and one in the header
    b.u(0, 1)
    b.flag(false)
    b.u(200, 8)
    b.flag(true)
    b.flag(true)
    b.ue(1)
    b.flag(true)  // temporal MVP
    b.flag(true)
    b.flag(false)
    b.flag(true)  // override: 3 and 2 references
    b.ue(2)
    b.ue(1)
    b.flag(true)
    for entry in [4, 0, 2] { b.u(entry, 3) }
    b.flag(true)
    for entry in [1, 3] { b.u(entry, 3) }
    b.flag(false)
    b.flag(true)  // cabac_init_flag
    b.flag(false)  // collocated from L1
    b.ue(1)
    b.ue(6)
    b.se(-1)
    for luma in [true, false, true] { b.flag(luma) }
    for chroma in [false, true, false] { b.flag(chroma) }
    b.se(2)
    b.se(-3)
    for value in [1, -2, 1, -2] { b.se(value) }
    b.se(0)
    b.se(5)
    for luma in [false, true] { b.flag(luma) }
    for chroma in [true, false] { b.flag(chroma) }
    for value in [0, 0, 0, 0] { b.se(value) }
    b.se(-1)
    b.se(1)
    b.ue(1)
    b.se(-2)
    b.se(1)
    b.se(-1)
    b.flag(true)
    b.flag(true)  // deblocking override
    b.flag(false)
    b.se(1)
    b.se(-1)
    b.flag(true)
    b.ue(3)
    b.ue(9)
    for offset in [100, 200, 300] { b.u(offset, 10) }
    b.ue(5)
    for byte in [0, 0, 0, 0, 2] { b.u(byte, 8) }  // 32 zero bits: stored with an emulation prevention byte
    b.align()

    var dependent = SyntaxWriter()
    dependent.flag(false)
    dependent.ue(0)
    dependent.flag(true)
    dependent.u(64, 7)
    dependent.ue(1)
    dependent.ue(3)
    dependent.u(5, 4)
    dependent.ue(0)
    dependent.align()

    var p = SyntaxWriter()
    p.flag(false)
    p.ue(0)
    p.flag(false)
    p.u(96, 7)
    p.u(0b10, 2)
    p.ue(1)  // P
    p.flag(false)
    p.u(5, 8)
    p.flag(false)  // a set of its own, predicted from set 1 with deltaRps +2: S0 -2, S1 +1 +2 (+3 unused)
    p.flag(true)
    p.ue(1)
    p.flag(false)
    p.ue(1)
    for (used, useDelta) in [(true, true), (false, false), (true, true), (false, true), (true, true)] {
        p.flag(used)
        if !used { p.flag(useDelta) }
    }
    p.ue(0)
    p.ue(0)
    p.flag(true)
    p.flag(false)
    p.flag(true)
    p.flag(false)  // default references
    p.flag(false)
    p.flag(false)
    p.ue(1)  // collocated_ref_idx, collocated_from_l0 inferred
    p.ue(3)
    p.se(0)
    for _ in 0..<4 { p.flag(false) }
    p.ue(0)
    p.se(3)
    p.se(0)
    p.se(0)
    p.flag(false)
    p.flag(true)
    p.flag(true)  // deblocking disabled
    p.flag(false)
    p.ue(0)
    p.ue(0)
    p.align()

    return [
        vps.nal(HEVCNALHeader.vps), handWrittenSPS(), pps.nal(HEVCNALHeader.pps),
        idr.nal(19, appending: data), b.nal(1, appending: data), dependent.nal(1, appending: data),
        p.nal(1, appending: data),
    ]
}

@Suite(.timeLimit(.minutes(30))) struct HEVCSyntaxTests {
    @Test func handWrittenHeadersEndWhereFFmpegSaysAndDeriveTheInferredValues() throws {
        let stream = handWrittenStream()
        let traced = try EncodedClip(name: "syntax", nalUnits: stream)
        let headers = try parseSliceHeaders(stream)
        #expect(traced.oracleBits.count == 4)
        #expect(mismatches(headers.map(\.rbspBits), traced.oracleBits) == [])
        let vcl = Array(stream.suffix(4))
        #expect(
            headers.map(\.storedBytes) == zip(vcl, traced.oracleBits).map { storedLength(ofRBSPBits: $0.1, in: $0.0) })
        // The B slice's extension holds 32 zero bits in a row, so an emulation prevention byte lies inside it.
        #expect(headers.map { $0.storedBytes - $0.rbspBits / 8 } == [0, 1, 0, 0])
        #expect(headers.map(\.storedBytes) == vcl.map { $0.count - 6 })

        let sps = try HEVCSequenceParameterSet(stream[1])
        #expect(try HEVCSequenceParameterSet(handWrittenSPS(extensions: 0x80)).rangeExtension)
        #expect(sps.shortTermReferenceSets[1].negativeDeltas == [-1, -2, -4])
        #expect(sps.shortTermReferenceSets[1].negativeUsed == [true, true, false])
        #expect(sps.shortTermReferenceSets[1].positiveDeltas == [1])
        #expect(sps.longTermUsedBySPS == [true, false])
        let b = headers[1]
        #expect(b.sliceType == HEVCSliceSegmentHeader.typeB && b.pictureTotalCurrent == 5)
        #expect(b.activeReferencesL0 == 3 && b.activeReferencesL1 == 2 && !b.collocatedFromL0 && b.entryPoints == 3)
        #expect(
            headers[2].dependent && headers[2].sliceType == HEVCSliceSegmentHeader.typeB && headers[2].address == 64)
        let p = headers[3]
        #expect(p.sliceType == HEVCSliceSegmentHeader.typeP && p.pictureTotalCurrent == 3)
        #expect(p.activeReferencesL0 == 2 && p.activeReferencesL1 == 0 && p.collocatedFromL0)
    }

    @Test(arguments: [
        (3, true, 0, "separate_colour_plane_flag is set: separate colour planes are not packaged"),
        (1, false, 0x40, "a multilayer or 3D extension (MV-HEVC, 3D-HEVC)"),
        (1, false, 0x20, "a multilayer or 3D extension (MV-HEVC, 3D-HEVC)"),
        (1, false, 0x10, "the screen content coding extension"),
        (1, false, 0x01, "sps_extension_4bits 1: extensions newer than H.265 v4"),
    ])
    func refusesWhatItDoesNotPackageAsUnsupported(chroma: Int, separate: Bool, extensions: Int, reason: String) {
        let sps = handWrittenSPS(chromaFormat: chroma, separatePlanes: separate, extensions: extensions)
        #expect(throws: FormatError("SPS at byte 40", reason, kind: .unsupported)) {
            _ = try HEVCSequenceParameterSet(sps, structure: "SPS at byte 40")
        }
    }
}
