/// The length of an H.264 slice header (H.264 §7.3.3), parsed against its SPS and PPS: what `cbcs` and
/// `cenc` leave clear in a slice NAL unit, and what Apple's clients recompute for themselves, so it
/// must be exact.
public struct H264SliceHeader: Equatable {
    /// Bytes of the stored (escaped) NAL unit that hold the NAL header and the whole slice header,
    /// its last partial byte included.
    public var storedLength: Int
    /// The slice header's length in bits after the NAL header, counted in the unescaped payload.
    var bitLength: Int

    /// The parameter sets slices refer to, by ID.
    public struct ParameterSets {
        public var sequence: [UInt32: H264SequenceParameterSet] = [:]
        public var picture: [UInt32: H264PictureParameterSet] = [:]

        /// No parameter sets yet.
        public init() {}

        /// Records the SPS or PPS `nal` (escaped, header first); other NAL units are ignored.
        public mutating func take(_ nal: [UInt8]) throws(FormatError) {
            guard let header = nal.first else { return }
            switch NALUnitType.of(header) {
            case NALUnitType.sequenceParameterSet:
                let sps = try H264SequenceParameterSet(nal: nal)
                sequence[sps.id] = sps
            case NALUnitType.pictureParameterSet:
                let pps = try H264PictureParameterSet(nal: nal)
                picture[pps.id] = pps
            default:
                break
            }
        }
    }

    /// Bytes of payload unescaped before a first parse attempt; almost every header fits.
    private static let firstTry = 96

    /// Parses the header of `nal` (escaped, NAL header first), a slice of type 1 or 5.
    public init(nal: UnsafeRawBufferPointer, parameterSets: ParameterSets) throws(FormatError) {
        let structure = "H.264 slice header"
        guard nal.count >= 2 else { throw FormatError(structure, "a slice NAL unit of \(nal.count) bytes") }
        let type = NALUnitType.of(nal[0])
        guard type == NALUnitType.nonIDRSlice || type == NALUnitType.idrSlice else {
            throw FormatError(structure, "NAL unit type \(type) is not a slice of a coded picture this parser reads")
        }
        var prefix = min(nal.count, Self.firstTry)
        while true {
            var payload: [UInt8] = []
            EmulationPrevention.unescape(UnsafeRawBufferPointer(rebasing: nal[1..<prefix]), appendingTo: &payload)
            do {
                bitLength = try Self.parse(
                    payload, nalHeader: nal[0], structure: structure, parameterSets: parameterSets)
                break
            } catch {
                // Ran out of the prefix: try the whole unit before believing the error.
                guard prefix < nal.count, error.reason.hasPrefix("ends after") else { throw error }
                prefix = nal.count
            }
        }
        storedLength = 1 + Self.storedBytes(forUnescaped: (bitLength + 7) / 8, in: nal)
    }

    /// The fewest bytes of the escaped payload after the NAL header that hold `count` unescaped bytes.
    static func storedBytes(forUnescaped count: Int, in nal: UnsafeRawBufferPointer) -> Int {
        var zeros = 0
        var unescaped = 0
        var index = 1
        while unescaped < count && index < nal.count {
            let byte = nal[index]
            if zeros >= 2 && byte == 3 {
                zeros = 0
            } else {
                unescaped += 1
                zeros = byte == 0 ? zeros + 1 : 0
            }
            index += 1
        }
        return index - 1
    }

    private static func parse(
        _ payload: [UInt8], nalHeader: UInt8, structure: String, parameterSets: ParameterSets
    ) throws(FormatError) -> Int {
        var bits = BitReader(payload, structure: structure)
        let isIDR = NALUnitType.of(nalHeader) == NALUnitType.idrSlice
        let referenceIDC = nalHeader >> 5
        _ = try bits.unsignedExpGolomb()  // first_mb_in_slice
        let sliceTypeCode = try bits.unsignedExpGolomb()
        guard sliceTypeCode <= 9 else { throw FormatError(structure, "slice_type \(sliceTypeCode)") }
        let sliceType = sliceTypeCode % 5  // 0 P, 1 B, 2 I, 3 SP, 4 SI
        let ppsID = try bits.unsignedExpGolomb()
        guard let pps = parameterSets.picture[ppsID] else {
            throw FormatError(structure, "refers to picture parameter set \(ppsID), which came before it in none")
        }
        guard let sps = parameterSets.sequence[pps.sequenceParameterSetID] else {
            throw FormatError(
                structure,
                "PPS \(ppsID) refers to sequence parameter set \(pps.sequenceParameterSetID), which is missing")
        }
        if sps.separateColourPlane { try bits.skip(2) }  // colour_plane_id
        try bits.skip(sps.log2MaxFrameNumber)  // frame_num
        var fieldPicture = false
        if !sps.frameMacroblocksOnly {
            fieldPicture = try bits.flag()
            if fieldPicture { try bits.skip(1) }  // bottom_field_flag
        }
        if isIDR { _ = try bits.unsignedExpGolomb() }  // idr_pic_id
        if sps.pictureOrderCountType == 0 {
            try bits.skip(sps.log2MaxPictureOrderCountLSB)  // pic_order_cnt_lsb
            if pps.bottomFieldPictureOrderInFramePresent && !fieldPicture { _ = try bits.signedExpGolomb() }
        }
        if sps.pictureOrderCountType == 1 && !sps.deltaPictureOrderAlwaysZero {
            _ = try bits.signedExpGolomb()  // delta_pic_order_cnt[0]
            if pps.bottomFieldPictureOrderInFramePresent && !fieldPicture { _ = try bits.signedExpGolomb() }
        }
        if pps.redundantPictureCountPresent { _ = try bits.unsignedExpGolomb() }  // redundant_pic_cnt
        if sliceType == 1 { try bits.skip(1) }  // direct_spatial_mv_pred_flag
        var referencesL0 = pps.defaultReferenceCountL0
        var referencesL1 = pps.defaultReferenceCountL1
        if sliceType == 0 || sliceType == 1 || sliceType == 3 {
            if try bits.flag() {  // num_ref_idx_active_override_flag
                referencesL0 = Int(try bits.unsignedExpGolomb()) + 1
                if sliceType == 1 { referencesL1 = Int(try bits.unsignedExpGolomb()) + 1 }
                guard referencesL0 <= 32, referencesL1 <= 32 else {
                    throw FormatError(structure, "more than 32 active reference indices")
                }
            }
        }
        // ref_pic_list_modification()
        if sliceType != 2 && sliceType != 4 { try skipListModification(&bits, structure) }
        if sliceType == 1 { try skipListModification(&bits, structure) }
        if (pps.weightedPrediction && (sliceType == 0 || sliceType == 3))
            || (pps.weightedBipredictionIDC == 1 && sliceType == 1)
        {
            // pred_weight_table()
            let hasChroma = !sps.separateColourPlane && sps.chromaFormat != 0
            _ = try bits.unsignedExpGolomb()  // luma_log2_weight_denom
            if hasChroma { _ = try bits.unsignedExpGolomb() }  // chroma_log2_weight_denom
            for count in sliceType == 1 ? [referencesL0, referencesL1] : [referencesL0] {
                for _ in 0..<count {
                    if try bits.flag() {
                        _ = try bits.signedExpGolomb()
                        _ = try bits.signedExpGolomb()
                    }
                    if hasChroma, try bits.flag() {
                        for _ in 0..<4 { _ = try bits.signedExpGolomb() }
                    }
                }
            }
        }
        if referenceIDC != 0 {
            // dec_ref_pic_marking()
            if isIDR {
                try bits.skip(2)  // no_output_of_prior_pics_flag, long_term_reference_flag
            } else if try bits.flag() {  // adaptive_ref_pic_marking_mode_flag
                var operations = 0
                while true {
                    let operation = try bits.unsignedExpGolomb()
                    if operation == 0 { break }
                    guard operation <= 6, operations < 66 else {
                        throw FormatError(structure, "memory_management_control_operation \(operation) is not valid")
                    }
                    operations += 1
                    if operation == 1 || operation == 3 { _ = try bits.unsignedExpGolomb() }
                    if operation == 2 { _ = try bits.unsignedExpGolomb() }
                    if operation == 3 || operation == 6 { _ = try bits.unsignedExpGolomb() }
                    if operation == 4 { _ = try bits.unsignedExpGolomb() }
                }
            }
        }
        if pps.entropyCodingModeCABAC && sliceType != 2 && sliceType != 4 {
            _ = try bits.unsignedExpGolomb()  // cabac_init_idc
        }
        _ = try bits.signedExpGolomb()  // slice_qp_delta
        if sliceType == 3 || sliceType == 4 {
            if sliceType == 3 { try bits.skip(1) }  // sp_for_switch_flag
            _ = try bits.signedExpGolomb()  // slice_qs_delta
        }
        if pps.deblockingFilterControlPresent {
            if try bits.unsignedExpGolomb() != 1 {  // disable_deblocking_filter_idc
                _ = try bits.signedExpGolomb()  // slice_alpha_c0_offset_div2
                _ = try bits.signedExpGolomb()  // slice_beta_offset_div2
            }
        }
        if pps.sliceGroupCount > 1 && (3...5).contains(pps.sliceGroupMapType) {
            let units = sps.pictureSizeInMapUnits
            let value = units / pps.sliceGroupChangeRate + (units % pps.sliceGroupChangeRate == 0 ? 0 : 1) + 1
            var width = 0
            while (1 << width) < value { width += 1 }
            try bits.skip(width)  // slice_group_change_cycle
        }
        return bits.position
    }

    private static func skipListModification(_ bits: inout BitReader, _ structure: String) throws(FormatError) {
        guard try bits.flag() else { return }  // ref_pic_list_modification_flag_lX
        var entries = 0
        while true {
            let idc = try bits.unsignedExpGolomb()  // modification_of_pic_nums_idc
            if idc == 3 { return }
            guard idc <= 2, entries < 33 else {
                throw FormatError(structure, "modification_of_pic_nums_idc \(idc) is not valid")
            }
            entries += 1
            _ = try bits.unsignedExpGolomb()  // abs_diff_pic_num_minus1 or long_term_pic_num
        }
    }
}
