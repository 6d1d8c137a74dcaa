import Testing

@testable import MediaFormats

@Suite(.timeLimit(.minutes(30))) struct HEVCSliceContextTests {
    /// Two encodes whose SPS and PPS share IDs 0 but differ (CTBs of 64 and 16 samples, so another
    /// `slice_segment_address` width; wavefronts on and off, so entry points or none), one after the
    /// other: the slices of each
    /// must be parsed against its own sets, so the per-PPS context is rebuilt when a PPS arrives again,
    /// and when the SPS it names does (the last part sends the PPS before its SPS).
    @Test func aParameterSetSentAgainWithTheSameIDReplacesTheSliceContext() throws {
        let large = try EncodedClip("context-ctu64", ["-x265-params", "log-level=error:ctu=64:slices=2"])
        let small = try EncodedClip("context-ctu16", ["-x265-params", "log-level=error:ctu=16:wpp=0"])
        func type(_ nal: [UInt8]) -> UInt8 { HEVCNALHeader.type(of: nal[0]) }
        #expect(
            large.nalUnits.first { type($0) == HEVCNALHeader.pps }
                != small.nalUnits.first { type($0) == HEVCNALHeader.pps })
        // The large clip again, each PPS moved before the SPS in front of it.
        var reordered = large.nalUnits
        for index in reordered.indices.dropFirst() where type(reordered[index]) == HEVCNALHeader.pps {
            if type(reordered[index - 1]) == HEVCNALHeader.sps { reordered.swapAt(index - 1, index) }
        }
        #expect(reordered != large.nalUnits)

        let headers = try parseSliceHeaders(large.nalUnits + small.nalUnits + reordered)
        let oracle = large.oracleBits + small.oracleBits + large.oracleBits
        #expect(headers.count == oracle.count && headers.count >= 60)
        #expect(mismatches(headers.map(\.rbspBits), oracle) == [])
        #expect(Set(headers.map(\.address)).count > 1)
        #expect(headers.contains { $0.entryPoints > 0 } && headers.contains { $0.entryPoints == 0 })
    }

    /// A slice naming a PPS that came before its SPS, or whose SPS never came, is refused by name.
    @Test func aPPSWithoutItsSPSIsRefusedUntilTheSPSArrives() throws {
        let clip = try EncodedClip("context-order", ["-x265-params", "log-level=error"])
        func first(_ type: UInt8) -> [UInt8] { clip.nalUnits.first { HEVCNALHeader.type(of: $0[0]) == type }! }
        let slice = clip.nalUnits.first { HEVCNALHeader.type(of: $0[0]) < 32 }!
        var sets = HEVCParameterSets()
        try sets.add(first(HEVCNALHeader.pps), structure: "PPS")
        #expect(throws: FormatError("slice", "PPS 0 names SPS 0, which was not sent")) {
            _ = try HEVCSliceSegmentHeader(slice, sets: sets, structure: "slice")
        }
        try sets.add(first(HEVCNALHeader.sps), structure: "SPS")
        #expect(try HEVCSliceSegmentHeader(slice, sets: sets, structure: "slice").rbspBits == clip.oracleBits[0])
    }
}
