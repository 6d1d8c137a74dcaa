/// The parameter sets a stream has sent so far, by ID, as a slice segment header refers to them.
public struct HEVCParameterSets: Sendable, Equatable {
    /// The sequence parameter sets by `sps_seq_parameter_set_id`.
    public private(set) var sequence: [Int: HEVCSequenceParameterSet] = [:]
    /// The picture parameter sets by `pps_pic_parameter_set_id`.
    public private(set) var picture: [Int: HEVCPictureParameterSet] = [:]
    /// By PPS ID (0…63), the slice context of that PPS and its SPS; nil until both have arrived. Rebuilt
    /// whenever a PPS, or the SPS it names, arrives again.
    private(set) var slicing = [HEVCSliceContext?](repeating: nil, count: 64)

    /// An empty collection.
    public init() {}

    /// Adds the VPS, SPS or PPS `nal` (stored bytes); other NAL units are ignored. Throws what its
    /// parser throws, naming `structure`.
    public mutating func add(_ nal: [UInt8], structure: String) throws(FormatError) {
        let header = try HEVCNALHeader(nal, structure: structure)
        switch header.type {
        case HEVCNALHeader.vps: _ = try HEVCVideoParameterSet(nal, structure: structure)
        case HEVCNALHeader.sps:
            let sps = try HEVCSequenceParameterSet(nal, structure: structure)
            sequence[sps.id] = sps
            for pps in picture.values where pps.spsID == sps.id {
                slicing[pps.id] = HEVCSliceContext(pps: pps, sps: sps)
            }
        case HEVCNALHeader.pps:
            let pps = try HEVCPictureParameterSet(nal, structure: structure)
            picture[pps.id] = pps
            slicing[pps.id] = sequence[pps.spsID].map { HEVCSliceContext(pps: pps, sps: $0) }
        default: break
        }
    }

    /// Equal when they hold the same parameter sets (the slice contexts follow from those).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.sequence == rhs.sequence && lhs.picture == rhs.picture
    }
}

/// A parsed `slice_segment_header()` (H.265 §7.3.6.1) of one VCL NAL unit, with its exact length: the
/// clear part of the NAL in `cbcs` and `cenc` is its header and this header.
public struct HEVCSliceSegmentHeader: Sendable, Equatable {
    /// The NAL unit header.
    public var nal: HEVCNALHeader
    /// `first_slice_segment_in_pic_flag`.
    public var firstSliceSegmentInPicture: Bool
    /// `dependent_slice_segment_flag`.
    public var dependent: Bool
    /// `slice_segment_address`.
    public var address: Int
    /// `slice_type`: 0 B, 1 P, 2 I (that of the independent segment for a dependent one: unknown, 2).
    public var sliceType: Int
    /// `num_ref_idx_l0_active_minus1` + 1, read or inferred from the PPS; 0 for I slices.
    public var activeReferencesL0: Int
    /// `num_ref_idx_l1_active_minus1` + 1, read or inferred; 0 for I and P slices.
    public var activeReferencesL1: Int
    /// `collocated_from_l0_flag`, read or inferred (1 when absent).
    public var collocatedFromL0: Bool
    /// `NumPicTotalCurr`.
    public var pictureTotalCurrent: Int
    /// `num_entry_point_offsets`.
    public var entryPoints: Int
    /// The header's length in RBSP bits, the two-byte NAL header and `byte_alignment()` included.
    public var rbspBits: Int
    /// The header's length in the stored (escaped) NAL bytes, NAL header included, rounded up to a byte:
    /// the clear bytes of the NAL after its length prefix.
    public var storedBytes: Int

    /// The slice type B.
    public static let typeB = 0
    /// The slice type P.
    public static let typeP = 1
    /// The slice type I.
    public static let typeI = 2

    /// Parses the header of the VCL NAL unit `nal` (stored bytes, header included) against `sets`.
    /// A dependent slice segment takes its slice fields from `previous`, the last independent segment's
    /// header, which a caller passes. Names `structure` (such as the NAL's position) in errors: malformed
    /// headers are `.malformed`, streams GuardPlay refuses `.unsupported`.
    public init(
        _ nal: [UInt8], sets: HEVCParameterSets, previous: HEVCSliceSegmentHeader? = nil, structure: String
    ) throws(FormatError) {
        let header = try HEVCNALHeader(nal, structure: structure)
        guard header.isVCL else { throw FormatError(structure, "NAL unit type \(header.type) is not a slice") }
        guard header.type <= 9 || (16...21).contains(header.type) else {
            throw FormatError(structure, "reserved VCL NAL unit type \(header.type)", kind: .unsupported)
        }
        guard header.layerID == 0 else {
            throw FormatError(
                structure, "nuh_layer_id \(header.layerID) (MV-HEVC or SHVC): only the base layer is packaged",
                kind: .unsupported)
        }
        self.nal = header
        var reader = EscapedBitReader(nal, from: 2, structure: structure)
        firstSliceSegmentInPicture = try reader.flag()
        if header.isIRAP { try reader.skip(1) }  // no_output_of_prior_pics_flag
        let ppsID = try reader.unsignedExpGolomb("slice_pic_parameter_set_id", max: 63)
        guard let context = sets.slicing[ppsID] else {
            guard let pps = sets.picture[ppsID] else {
                throw FormatError(structure, "names PPS \(ppsID), which was not sent")
            }
            throw FormatError(structure, "PPS \(ppsID) names SPS \(pps.spsID), which was not sent")
        }
        let pps = context.pps
        dependent = false
        address = 0
        if !firstSliceSegmentInPicture {
            if pps.dependentSliceSegments { dependent = try reader.flag() }
            let size = context.pictureSizeInCTBs
            address = Int(try reader.read(context.addressBits))
            guard address < size else {
                throw FormatError(
                    structure, "slice_segment_address \(address) is beyond the \(size) CTBs of the picture")
            }
        }
        sliceType = Self.typeI
        activeReferencesL0 = 0
        activeReferencesL1 = 0
        collocatedFromL0 = true
        pictureTotalCurrent = 0
        entryPoints = 0
        rbspBits = 0
        storedBytes = 0
        if dependent {
            guard let previous else {
                throw FormatError(structure, "a dependent slice segment with no independent one before it")
            }
            sliceType = previous.sliceType
            activeReferencesL0 = previous.activeReferencesL0
            activeReferencesL1 = previous.activeReferencesL1
            collocatedFromL0 = previous.collocatedFromL0
            pictureTotalCurrent = previous.pictureTotalCurrent
        } else {
            try readSliceFields(&reader, header: header, context: context, structure: structure)
        }
        if pps.tiles || pps.entropyCodingSync {
            entryPoints = try reader.unsignedExpGolomb("num_entry_point_offsets", max: 440 * 22 * 20)
            if entryPoints > 0 {
                let length = try reader.unsignedExpGolomb("offset_len_minus1", max: 31) + 1
                try reader.skip(entryPoints * length)
            }
        }
        if pps.sliceHeaderExtensionPresent {
            let length = try reader.unsignedExpGolomb("slice_segment_header_extension_length", max: 256)
            try reader.skip(8 * length)
        }
        // byte_alignment(): a one bit, then zero bits to the byte boundary.
        guard try reader.flag() else { throw FormatError(structure, "byte_alignment() does not start with a 1 bit") }
        while !reader.isByteAligned {
            guard !(try reader.flag()) else {
                throw FormatError(structure, "byte_alignment() has a 1 bit after the first")
            }
        }
        rbspBits = 16 + reader.rbspBitsRead
        storedBytes = reader.storedEnd
        guard storedBytes < nal.count else {
            throw FormatError(structure, "the slice segment header fills the whole NAL unit: no slice data")
        }
    }

    /// The fields of an independent slice segment, from `slice_reserved_flag` to
    /// `slice_loop_filter_across_slices_enabled_flag`.
    private mutating func readSliceFields(
        _ reader: inout EscapedBitReader, header: HEVCNALHeader, context: HEVCSliceContext, structure: String
    ) throws(FormatError) {
        let sps = context.sps
        let pps = context.pps
        try reader.skip(pps.extraSliceHeaderBits)
        sliceType = try reader.unsignedExpGolomb("slice_type", max: 2)
        if header.isIRAP && sliceType != Self.typeI {
            throw FormatError(structure, "an IRAP picture with a slice of type \(sliceType), not I")
        }
        if pps.outputFlagPresent { try reader.skip(1) }  // pic_output_flag
        var temporalMVP = false
        if !header.isIDR {
            try reader.skip(sps.log2MaxPicOrderCountLSB)  // slice_pic_order_cnt_lsb
            let used = context.shortTermSetsUsed
            if !(try reader.flag()) {  // short_term_ref_pic_set_sps_flag
                pictureTotalCurrent = try HEVCShortTermReferenceSet.readUsedCountInSliceHeader(
                    &reader, sets: sps.shortTermReferenceSets, structure: structure)
            } else {
                guard !used.isEmpty else {
                    throw FormatError(structure, "refers to an SPS reference set; the SPS has none")
                }
                let index = Int(try reader.read(context.shortTermSetIndexBits))
                guard index < used.count else {
                    throw FormatError(structure, "short_term_ref_pic_set_idx \(index) of \(used.count) sets")
                }
                pictureTotalCurrent = used[index]
            }
            if sps.longTermReferencesPresent {
                let candidates = sps.longTermUsedBySPS.count
                let fromSPS =
                    candidates > 0 ? try reader.unsignedExpGolomb("num_long_term_sps", max: UInt32(candidates)) : 0
                let pictures = try reader.unsignedExpGolomb("num_long_term_pics", max: 32)
                for index in 0..<(fromSPS + pictures) {
                    if index < fromSPS {
                        let candidate = Int(try reader.read(context.longTermIndexBits))
                        guard candidate < candidates else {
                            throw FormatError(structure, "lt_idx_sps \(candidate) of \(candidates) candidates")
                        }
                        if sps.longTermUsedBySPS[candidate] { pictureTotalCurrent += 1 }
                    } else {
                        try reader.skip(sps.log2MaxPicOrderCountLSB)  // poc_lsb_lt
                        if try reader.flag() { pictureTotalCurrent += 1 }  // used_by_curr_pic_lt_flag
                    }
                    if try reader.flag() { _ = try reader.unsignedExpGolomb() }  // delta_poc_msb_cycle_lt
                }
            }
            if sps.temporalMVP { temporalMVP = try reader.flag() }
        }
        var saoLuma = false
        var saoChroma = false
        if sps.sampleAdaptiveOffset {
            saoLuma = try reader.flag()
            if sps.chromaArrayType != 0 { saoChroma = try reader.flag() }
        }
        if sliceType != Self.typeI {
            guard pictureTotalCurrent > 0 else {
                throw FormatError(structure, "a P or B slice whose reference picture sets use no picture")
            }
            activeReferencesL0 = pps.defaultActiveReferencesL0
            activeReferencesL1 = sliceType == Self.typeB ? pps.defaultActiveReferencesL1 : 0
            if try reader.flag() {  // num_ref_idx_active_override_flag
                activeReferencesL0 = try reader.unsignedExpGolomb("num_ref_idx_l0_active_minus1", max: 14) + 1
                if sliceType == Self.typeB {
                    activeReferencesL1 = try reader.unsignedExpGolomb("num_ref_idx_l1_active_minus1", max: 14) + 1
                }
            }
            if pps.listsModificationPresent && pictureTotalCurrent > 1 {
                let bits = HEVCSliceContext.ceilLog2(pictureTotalCurrent)
                if try reader.flag() { try reader.skip(activeReferencesL0 * bits) }
                if sliceType == Self.typeB, try reader.flag() { try reader.skip(activeReferencesL1 * bits) }
            }
            if sliceType == Self.typeB { try reader.skip(1) }  // mvd_l1_zero_flag
            if pps.cabacInitPresent { try reader.skip(1) }  // cabac_init_flag
            if temporalMVP {
                if sliceType == Self.typeB { collocatedFromL0 = try reader.flag() }
                let references = collocatedFromL0 ? activeReferencesL0 : activeReferencesL1
                if references > 1 {
                    _ = try reader.unsignedExpGolomb("collocated_ref_idx", max: UInt32(references - 1))
                }
            }
            if (pps.weightedPrediction && sliceType == Self.typeP)
                || (pps.weightedBiprediction && sliceType == Self.typeB)
            {
                try skipPredictionWeightTable(&reader, chroma: sps.chromaArrayType != 0)
            }
            _ = try reader.unsignedExpGolomb("five_minus_max_num_merge_cand", max: 4)
        }
        _ = try reader.signedExpGolomb()  // slice_qp_delta
        if pps.sliceChromaQPOffsetsPresent {
            _ = try reader.signedExpGolomb()
            _ = try reader.signedExpGolomb()
        }
        if pps.chromaQPOffsetList { try reader.skip(1) }  // cu_chroma_qp_offset_enabled_flag
        var deblockingDisabled = pps.deblockingFilterDisabled
        if pps.deblockingFilterOverride, try reader.flag() {  // deblocking_filter_override_flag
            deblockingDisabled = try reader.flag()
            if !deblockingDisabled {
                _ = try reader.signedExpGolomb()
                _ = try reader.signedExpGolomb()
            }
        }
        if pps.loopFilterAcrossSlices && (saoLuma || saoChroma || !deblockingDisabled) {
            try reader.skip(1)  // slice_loop_filter_across_slices_enabled_flag
        }
    }

    /// Reads past `pred_weight_table()` (§7.3.6.3). In a single-layer stream without screen content
    /// coding no reference picture is the current one, so every weight flag is present.
    private func skipPredictionWeightTable(_ reader: inout EscapedBitReader, chroma: Bool) throws(FormatError) {
        _ = try reader.unsignedExpGolomb()  // luma_log2_weight_denom
        if chroma { _ = try reader.signedExpGolomb() }  // delta_chroma_log2_weight_denom
        for count in [activeReferencesL0, activeReferencesL1] where count > 0 {
            // luma_weight_lX_flag and chroma_weight_lX_flag of each reference (at most 15), as bits.
            var luma: UInt16 = 0
            var chromaFlags: UInt16 = 0
            for index in 0..<count {
                if try reader.flag() { luma |= 1 << index }
            }
            for index in 0..<(chroma ? count : 0) {
                if try reader.flag() { chromaFlags |= 1 << index }
            }
            for index in 0..<count {
                if luma & (1 << index) != 0 {
                    _ = try reader.signedExpGolomb()
                    _ = try reader.signedExpGolomb()
                }
                if chromaFlags & (1 << index) != 0 {
                    for _ in 0..<4 { _ = try reader.signedExpGolomb() }
                }
            }
        }
    }
}
