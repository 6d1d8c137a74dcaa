extension HEVCShortTermReferenceSet {
    /// Reads a slice segment header's own set (`st_ref_pic_set(num_short_term_ref_pic_sets)`) after the
    /// SPS's `sets` and returns its `usedCount`: what `read(_:index:total:sets:structure:)` with
    /// `index == total == sets.count` derives, with the same checks, but counted rather than built.
    ///
    /// A predicted set (equations 7-61 and 7-62) holds each picture `j` of the reference set, and the
    /// reference picture itself, whose `use_delta_flag` is set and whose delta plus `deltaRps` is not
    /// zero; it is used when `used_by_curr_pic_flag` is set. The order of the derived lists does not
    /// change either count.
    static func readUsedCountInSliceHeader(
        _ reader: inout EscapedBitReader, sets: [HEVCShortTermReferenceSet], structure: String
    ) throws(FormatError) -> Int {
        let index = sets.count
        let predicted = index != 0 ? try reader.flag() : false
        var used = 0
        guard predicted else {
            let negatives = try reader.unsignedExpGolomb("num_negative_pics", max: 16)
            let positives = try reader.unsignedExpGolomb("num_positive_pics", max: UInt32(16 - negatives))
            for _ in 0..<negatives {
                _ = try reader.unsignedExpGolomb("delta_poc_s0_minus1", max: 32_767)
                if try reader.flag() { used += 1 }
            }
            for _ in 0..<positives {
                _ = try reader.unsignedExpGolomb("delta_poc_s1_minus1", max: 32_767)
                if try reader.flag() { used += 1 }
            }
            return used
        }
        let deltaIndex = try reader.unsignedExpGolomb("delta_idx_minus1", max: UInt32(index - 1)) + 1
        let reference = sets[index - deltaIndex]
        let sign = try reader.flag()
        let magnitude = Int32(try reader.unsignedExpGolomb("abs_delta_rps_minus1", max: 32_767)) + 1
        let deltaRPS = sign ? -magnitude : magnitude
        let negatives = reference.negativeDeltas.count
        var pictures = 0
        for j in 0...reference.count {
            let isUsed = try reader.flag()
            let useDelta = isUsed ? true : try reader.flag()
            let referenceDelta =
                j < negatives
                ? reference.negativeDeltas[j] : j < reference.count ? reference.positiveDeltas[j - negatives] : 0
            if useDelta && referenceDelta + deltaRPS != 0 {
                pictures += 1
                if isUsed { used += 1 }
            }
        }
        guard pictures <= 16 else {
            throw FormatError(structure, "a predicted reference picture set has \(pictures) pictures, at most 16")
        }
        return used
    }
}
