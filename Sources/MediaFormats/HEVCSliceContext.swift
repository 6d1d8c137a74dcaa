/// What every slice segment header naming one PPS needs of it and of its SPS, derived once when either
/// arrives rather than per slice: the two sets themselves and the bit widths and counts they imply.
///
/// A class, so a slice takes it with one reference count rather than copying the SPS's arrays; every
/// property is a constant, so it is Sendable as it is.
final class HEVCSliceContext: Sendable {
    /// The picture parameter set.
    let pps: HEVCPictureParameterSet
    /// The sequence parameter set the PPS names.
    let sps: HEVCSequenceParameterSet
    /// `PicSizeInCtbsY`.
    let pictureSizeInCTBs: Int
    /// The bits of `slice_segment_address`: `Ceil(Log2(PicSizeInCtbsY))`.
    let addressBits: Int
    /// The bits of `short_term_ref_pic_set_idx`: `Ceil(Log2(num_short_term_ref_pic_sets))`, 0 for one set.
    let shortTermSetIndexBits: Int
    /// `usedCount` of each of the SPS's short-term reference picture sets.
    let shortTermSetsUsed: [Int]
    /// The bits of `lt_idx_sps`: `Ceil(Log2(num_long_term_ref_pics_sps))`, 0 for one candidate.
    let longTermIndexBits: Int

    /// The context of `pps` with `sps`, the SPS it names.
    init(pps: HEVCPictureParameterSet, sps: HEVCSequenceParameterSet) {
        self.pps = pps
        self.sps = sps
        pictureSizeInCTBs = sps.pictureSizeInCTBs
        addressBits = Self.ceilLog2(pictureSizeInCTBs)
        shortTermSetIndexBits = Self.ceilLog2(sps.shortTermReferenceSets.count)
        shortTermSetsUsed = sps.shortTermReferenceSets.map(\.usedCount)
        longTermIndexBits = Self.ceilLog2(sps.longTermUsedBySPS.count)
    }

    /// `Ceil(Log2(value))`, 0 for 0 and 1.
    static func ceilLog2(_ value: Int) -> Int {
        var bits = 0
        while (1 << bits) < value { bits += 1 }
        return bits
    }
}
