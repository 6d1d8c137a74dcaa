/// `profile_tier_level()` (H.265 §7.3.3): the general profile, tier and level that `hvcC` and the
/// CODECS string carry; sub-layer fields are read past.
public struct HEVCProfileTierLevel: Sendable, Equatable {
    /// `general_profile_space`, 0…3.
    public var profileSpace: UInt8
    /// `general_tier_flag`: false Main tier, true High tier.
    public var highTier: Bool
    /// `general_profile_idc`.
    public var profileIDC: UInt8
    /// `general_profile_compatibility_flag[0…31]`, flag 0 the most significant bit.
    public var compatibilityFlags: UInt32
    /// The 48 bits from `general_progressive_source_flag` on, most significant first, as six bytes.
    public var constraintFlags: [UInt8]
    /// `general_level_idc` (30 × the level).
    public var levelIDC: UInt8

    /// `general_progressive_source_flag`.
    public var progressiveSource: Bool { constraintFlags[0] & 0x80 != 0 }
    /// `general_interlaced_source_flag`.
    public var interlacedSource: Bool { constraintFlags[0] & 0x40 != 0 }

    /// The fields as given; `constraintFlags` should be six bytes.
    public init(
        profileSpace: UInt8, highTier: Bool, profileIDC: UInt8, compatibilityFlags: UInt32, constraintFlags: [UInt8],
        levelIDC: UInt8
    ) {
        self.profileSpace = profileSpace
        self.highTier = highTier
        self.profileIDC = profileIDC
        self.compatibilityFlags = compatibilityFlags
        self.constraintFlags = constraintFlags
        self.levelIDC = levelIDC
    }

    /// Reads the structure for `maxSubLayersMinus1` sub-layers.
    static func read(_ reader: inout EscapedBitReader, maxSubLayersMinus1: Int) throws(FormatError) -> Self {
        let profileSpace = UInt8(try reader.read(2))
        let highTier = try reader.flag()
        let profileIDC = UInt8(try reader.read(5))
        let compatibility = try reader.read(32)
        var constraints: [UInt8] = []
        for _ in 0..<6 { constraints.append(UInt8(try reader.read(8))) }
        let level = UInt8(try reader.read(8))
        var profilePresent: [Bool] = []
        var levelPresent: [Bool] = []
        for _ in 0..<maxSubLayersMinus1 {
            profilePresent.append(try reader.flag())
            levelPresent.append(try reader.flag())
        }
        if maxSubLayersMinus1 > 0 { try reader.skip(2 * (8 - maxSubLayersMinus1)) }
        for index in 0..<maxSubLayersMinus1 {
            if profilePresent[index] { try reader.skip(88) }
            if levelPresent[index] { try reader.skip(8) }
        }
        return Self(
            profileSpace: profileSpace, highTier: highTier, profileIDC: profileIDC, compatibilityFlags: compatibility,
            constraintFlags: constraints, levelIDC: level)
    }
}

/// One short-term reference picture set (H.265 §7.3.7, §7.4.8): the deltas of the pictures before and
/// after the current one and whether each is used by it, derived also when predicted from another set.
public struct HEVCShortTermReferenceSet: Sendable, Equatable {
    /// `DeltaPocS0`: negative POC deltas, nearest first.
    public var negativeDeltas: [Int32] = []
    /// `UsedByCurrPicS0`.
    public var negativeUsed: [Bool] = []
    /// `DeltaPocS1`: positive POC deltas, nearest first.
    public var positiveDeltas: [Int32] = []
    /// `UsedByCurrPicS1`.
    public var positiveUsed: [Bool] = []

    /// `NumDeltaPocs`.
    public var count: Int { negativeDeltas.count + positiveDeltas.count }
    /// The pictures of the set the current picture uses (its share of `NumPicTotalCurr`).
    public var usedCount: Int {
        negativeUsed.reduce(0) { $1 ? $0 + 1 : $0 } + positiveUsed.reduce(0) { $1 ? $0 + 1 : $0 }
    }

    /// Reads set `index` after `sets`, those read before it; `total` is `num_short_term_ref_pic_sets`,
    /// and a slice header's own set has `index == total` (only it carries `delta_idx_minus1`).
    static func read(
        _ reader: inout EscapedBitReader, index: Int, total: Int, sets: [HEVCShortTermReferenceSet],
        structure: String
    ) throws(FormatError) -> Self {
        let predicted = index != 0 ? try reader.flag() : false
        guard predicted else {
            let negatives = try reader.unsignedExpGolomb("num_negative_pics", max: 16)
            let positives = try reader.unsignedExpGolomb("num_positive_pics", max: UInt32(16 - negatives))
            var set = Self()
            var poc: Int32 = 0
            for _ in 0..<negatives {
                poc -= Int32(try reader.unsignedExpGolomb("delta_poc_s0_minus1", max: 32_767)) + 1
                set.negativeDeltas.append(poc)
                set.negativeUsed.append(try reader.flag())
            }
            poc = 0
            for _ in 0..<positives {
                poc += Int32(try reader.unsignedExpGolomb("delta_poc_s1_minus1", max: 32_767)) + 1
                set.positiveDeltas.append(poc)
                set.positiveUsed.append(try reader.flag())
            }
            return set
        }
        let deltaIndex =
            index == total ? try reader.unsignedExpGolomb("delta_idx_minus1", max: UInt32(index - 1)) + 1 : 1
        let reference = sets[index - deltaIndex]
        let sign = try reader.flag()
        let magnitude = Int32(try reader.unsignedExpGolomb("abs_delta_rps_minus1", max: 32_767)) + 1
        let deltaRPS = sign ? -magnitude : magnitude
        var used: [Bool] = []
        var useDelta: [Bool] = []
        for _ in 0...reference.count {
            let isUsed = try reader.flag()
            used.append(isUsed)
            useDelta.append(isUsed ? true : try reader.flag())
        }
        // Equations 7-61 and 7-62: entries 0..<negatives are S0, then S1, then the reference picture itself.
        let negatives = reference.negativeDeltas.count
        var set = Self()
        for j in stride(from: reference.positiveDeltas.count - 1, through: 0, by: -1) {
            let delta = reference.positiveDeltas[j] + deltaRPS
            if delta < 0 && useDelta[negatives + j] {
                set.negativeDeltas.append(delta)
                set.negativeUsed.append(used[negatives + j])
            }
        }
        if deltaRPS < 0 && useDelta[reference.count] {
            set.negativeDeltas.append(deltaRPS)
            set.negativeUsed.append(used[reference.count])
        }
        for j in 0..<negatives {
            let delta = reference.negativeDeltas[j] + deltaRPS
            if delta < 0 && useDelta[j] {
                set.negativeDeltas.append(delta)
                set.negativeUsed.append(used[j])
            }
        }
        for j in stride(from: negatives - 1, through: 0, by: -1) {
            let delta = reference.negativeDeltas[j] + deltaRPS
            if delta > 0 && useDelta[j] {
                set.positiveDeltas.append(delta)
                set.positiveUsed.append(used[j])
            }
        }
        if deltaRPS > 0 && useDelta[reference.count] {
            set.positiveDeltas.append(deltaRPS)
            set.positiveUsed.append(used[reference.count])
        }
        for j in 0..<reference.positiveDeltas.count {
            let delta = reference.positiveDeltas[j] + deltaRPS
            if delta > 0 && useDelta[negatives + j] {
                set.positiveDeltas.append(delta)
                set.positiveUsed.append(used[negatives + j])
            }
        }
        guard set.count <= 16 else {
            throw FormatError(structure, "a predicted reference picture set has \(set.count) pictures, at most 16")
        }
        return set
    }
}

/// The parts of a video parameter set (H.265 §7.3.2.1) GuardPlay checks: one layer only.
public struct HEVCVideoParameterSet: Sendable, Equatable {
    /// `vps_video_parameter_set_id`.
    public var id: Int
    /// `vps_max_sub_layers_minus1` + 1.
    public var maxSubLayers: Int
    /// The general profile, tier and level.
    public var profileTierLevel: HEVCProfileTierLevel

    /// Parses the VPS NAL unit `nal` (header included, stored bytes); refuses more than one layer.
    public init(_ nal: [UInt8], structure: String = "HEVC VPS") throws(FormatError) {
        _ = try HEVCNALHeader(nal, structure: structure)
        var reader = EscapedBitReader(nal, from: 2, structure: structure)
        id = Int(try reader.read(4))
        try reader.skip(2)  // vps_base_layer_internal_flag, vps_base_layer_available_flag
        let layers = Int(try reader.read(6)) + 1
        guard layers == 1 else {
            throw FormatError(
                structure, "\(layers) layers (MV-HEVC or SHVC): only single-layer HEVC is packaged", kind: .unsupported)
        }
        maxSubLayers = Int(try reader.read(3)) + 1
        guard maxSubLayers <= 7 else { throw FormatError(structure, "vps_max_sub_layers_minus1 is above 6") }
        try reader.skip(1 + 16)  // vps_temporal_id_nesting_flag, vps_reserved_0xffff_16bits
        profileTierLevel = try .read(&reader, maxSubLayersMinus1: maxSubLayers - 1)
    }
}

/// A sequence parameter set (H.265 §7.3.2.2): every field a slice segment header depends on, and what
/// `hvcC` and the CODECS string carry. Streams GuardPlay cannot carry are refused with the reason.
public struct HEVCSequenceParameterSet: Sendable, Equatable {
    /// `sps_seq_parameter_set_id`.
    public var id: Int
    /// `sps_video_parameter_set_id`.
    public var vpsID: Int
    /// `sps_max_sub_layers_minus1` + 1.
    public var maxSubLayers: Int
    /// `sps_temporal_id_nesting_flag`.
    public var temporalIDNesting: Bool
    /// The general profile, tier and level.
    public var profileTierLevel: HEVCProfileTierLevel
    /// `chroma_format_idc`: 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    public var chromaFormat: Int
    /// Luma width and height in samples.
    public var width: Int
    /// Luma height in samples.
    public var height: Int
    /// `bit_depth_luma_minus8` + 8.
    public var bitDepthLuma: Int
    /// `bit_depth_chroma_minus8` + 8.
    public var bitDepthChroma: Int
    /// `log2_max_pic_order_cnt_lsb_minus4` + 4: the bits of `slice_pic_order_cnt_lsb`.
    public var log2MaxPicOrderCountLSB: Int
    /// `CtbLog2SizeY`.
    public var log2CTBSize: Int
    /// `sample_adaptive_offset_enabled_flag`.
    public var sampleAdaptiveOffset: Bool
    /// The short-term reference picture sets the SPS lists.
    public var shortTermReferenceSets: [HEVCShortTermReferenceSet]
    /// `long_term_ref_pics_present_flag`.
    public var longTermReferencesPresent: Bool
    /// `used_by_curr_pic_lt_sps_flag` of each long-term candidate the SPS lists.
    public var longTermUsedBySPS: [Bool]
    /// `sps_temporal_mvp_enabled_flag`.
    public var temporalMVP: Bool
    /// `sps_range_extension_flag`.
    public var rangeExtension: Bool
    /// `min_spatial_segmentation_idc` from the VUI, 0 when absent.
    public var minSpatialSegmentation: Int

    /// `ChromaArrayType` (0 for monochrome; separate colour planes are refused).
    public var chromaArrayType: Int { chromaFormat }
    /// `PicSizeInCtbsY`.
    public var pictureSizeInCTBs: Int {
        let ctb = 1 << log2CTBSize
        return ((width + ctb - 1) / ctb) * ((height + ctb - 1) / ctb)
    }

    /// Parses the SPS NAL unit `nal` (header included, stored bytes).
    public init(_ nal: [UInt8], structure: String = "HEVC SPS") throws(FormatError) {
        let header = try HEVCNALHeader(nal, structure: structure)
        func unsupported(_ reason: String) -> FormatError { FormatError(structure, reason, kind: .unsupported) }
        guard header.layerID == 0 else {
            throw unsupported("nuh_layer_id \(header.layerID): only the base layer is packaged")
        }
        var reader = EscapedBitReader(nal, from: 2, structure: structure)
        vpsID = Int(try reader.read(4))
        maxSubLayers = Int(try reader.read(3)) + 1
        guard maxSubLayers <= 7 else { throw FormatError(structure, "sps_max_sub_layers_minus1 is above 6") }
        temporalIDNesting = try reader.flag()
        profileTierLevel = try .read(&reader, maxSubLayersMinus1: maxSubLayers - 1)
        id = try reader.unsignedExpGolomb("sps_seq_parameter_set_id", max: 15)
        chromaFormat = try reader.unsignedExpGolomb("chroma_format_idc", max: 3)
        if chromaFormat == 3, try reader.flag() {
            throw unsupported("separate_colour_plane_flag is set: separate colour planes are not packaged")
        }
        width = try reader.unsignedExpGolomb("pic_width_in_luma_samples", max: 16_888)
        height = try reader.unsignedExpGolomb("pic_height_in_luma_samples", max: 16_888)
        guard width > 0, height > 0 else { throw FormatError(structure, "a picture of \(width)x\(height)") }
        if try reader.flag() {  // conformance_window_flag
            for _ in 0..<4 { _ = try reader.unsignedExpGolomb() }
        }
        bitDepthLuma = try reader.unsignedExpGolomb("bit_depth_luma_minus8", max: 8) + 8
        bitDepthChroma = try reader.unsignedExpGolomb("bit_depth_chroma_minus8", max: 8) + 8
        log2MaxPicOrderCountLSB = try reader.unsignedExpGolomb("log2_max_pic_order_cnt_lsb_minus4", max: 12) + 4
        let orderingForAll = try reader.flag()
        for _ in (orderingForAll ? 0 : maxSubLayers - 1)..<maxSubLayers {
            for _ in 0..<3 { _ = try reader.unsignedExpGolomb() }
        }
        let log2MinCB = try reader.unsignedExpGolomb("log2_min_luma_coding_block_size_minus3", max: 3) + 3
        log2CTBSize = log2MinCB + (try reader.unsignedExpGolomb("log2_diff_max_min_luma_coding_block_size", max: 3))
        guard (4...6).contains(log2CTBSize) else { throw FormatError(structure, "a CTB of 2^\(log2CTBSize) samples") }
        for _ in 0..<4 { _ = try reader.unsignedExpGolomb() }  // transform sizes and hierarchy depths
        if try reader.flag(), try reader.flag() {  // scaling_list_enabled_flag, sps_scaling_list_data_present_flag
            try HEVCSequenceParameterSet.skipScalingListData(&reader)
        }
        try reader.skip(1)  // amp_enabled_flag
        sampleAdaptiveOffset = try reader.flag()
        if try reader.flag() {  // pcm_enabled_flag
            try reader.skip(8)
            _ = try reader.unsignedExpGolomb()
            _ = try reader.unsignedExpGolomb()
            try reader.skip(1)
        }
        let setCount = try reader.unsignedExpGolomb("num_short_term_ref_pic_sets", max: 64)
        var sets: [HEVCShortTermReferenceSet] = []
        for index in 0..<setCount {
            sets.append(try .read(&reader, index: index, total: setCount, sets: sets, structure: structure))
        }
        shortTermReferenceSets = sets
        longTermReferencesPresent = try reader.flag()
        longTermUsedBySPS = []
        if longTermReferencesPresent {
            let count = try reader.unsignedExpGolomb("num_long_term_ref_pics_sps", max: 32)
            for _ in 0..<count {
                try reader.skip(log2MaxPicOrderCountLSB)  // lt_ref_pic_poc_lsb_sps
                longTermUsedBySPS.append(try reader.flag())
            }
        }
        temporalMVP = try reader.flag()
        try reader.skip(1)  // strong_intra_smoothing_enabled_flag
        minSpatialSegmentation = 0
        if try reader.flag() {  // vui_parameters_present_flag
            minSpatialSegmentation = try HEVCSequenceParameterSet.readVUI(
                &reader, maxSubLayersMinus1: maxSubLayers - 1, structure: structure)
        }
        rangeExtension = false
        if try reader.flag() {  // sps_extension_present_flag
            rangeExtension = try reader.flag()
            let multilayer = try reader.flag()
            let threeD = try reader.flag()
            let screenContent = try reader.flag()
            let more = try reader.read(4)
            if multilayer || threeD { throw unsupported("a multilayer or 3D extension (MV-HEVC, 3D-HEVC)") }
            if screenContent { throw unsupported("the screen content coding extension") }
            if more != 0 { throw unsupported("sps_extension_4bits \(more): extensions newer than H.265 v4") }
            if rangeExtension { try reader.skip(9) }  // the nine range extension flags: no slice header syntax
        }
        if profileTierLevel.interlacedSource && !profileTierLevel.progressiveSource {
            throw unsupported("interlaced source (general_interlaced_source_flag): interlaced HEVC is not packaged")
        }
    }

    /// Reads past `scaling_list_data()` (§7.3.4).
    static func skipScalingListData(_ reader: inout EscapedBitReader) throws(FormatError) {
        for sizeID in 0..<4 {
            for _ in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                if try reader.flag() {  // scaling_list_pred_mode_flag
                    let coefficients = min(64, 1 << (4 + (sizeID << 1)))
                    if sizeID > 1 { _ = try reader.signedExpGolomb() }
                    for _ in 0..<coefficients { _ = try reader.signedExpGolomb() }
                } else {
                    _ = try reader.unsignedExpGolomb()  // scaling_list_pred_matrix_id_delta
                }
            }
        }
    }

    /// Reads `vui_parameters()` (§E.2.1), refusing field-coded video; returns `min_spatial_segmentation_idc`.
    static func readVUI(
        _ reader: inout EscapedBitReader, maxSubLayersMinus1: Int, structure: String
    ) throws(FormatError) -> Int {
        if try reader.flag(), try reader.read(8) == 255 { try reader.skip(32) }  // aspect ratio, SAR
        if try reader.flag() { try reader.skip(1) }  // overscan
        if try reader.flag() {  // video_signal_type_present_flag
            try reader.skip(4)
            if try reader.flag() { try reader.skip(24) }
        }
        if try reader.flag() {  // chroma_loc_info_present_flag
            _ = try reader.unsignedExpGolomb()
            _ = try reader.unsignedExpGolomb()
        }
        try reader.skip(1)  // neutral_chroma_indication_flag
        if try reader.flag() {
            throw FormatError(
                structure, "field_seq_flag is set: field-coded (interlaced) HEVC is not packaged", kind: .unsupported)
        }
        try reader.skip(1)  // frame_field_info_present_flag
        if try reader.flag() {  // default_display_window_flag
            for _ in 0..<4 { _ = try reader.unsignedExpGolomb() }
        }
        if try reader.flag() {  // vui_timing_info_present_flag
            try reader.skip(64)
            if try reader.flag() { _ = try reader.unsignedExpGolomb() }
            if try reader.flag() { try skipHRD(&reader, maxSubLayersMinus1: maxSubLayersMinus1) }
        }
        var minSpatialSegmentation = 0
        if try reader.flag() {  // bitstream_restriction_flag
            try reader.skip(3)
            minSpatialSegmentation = try reader.unsignedExpGolomb("min_spatial_segmentation_idc", max: 4095)
            for _ in 0..<4 { _ = try reader.unsignedExpGolomb() }
        }
        return minSpatialSegmentation
    }

    /// Reads past `hrd_parameters(1, maxSubLayersMinus1)` (§E.2.2).
    static func skipHRD(_ reader: inout EscapedBitReader, maxSubLayersMinus1: Int) throws(FormatError) {
        let nal = try reader.flag()
        let vcl = try reader.flag()
        var subPicture = false
        if nal || vcl {
            subPicture = try reader.flag()
            if subPicture { try reader.skip(8 + 5 + 1 + 5) }
            try reader.skip(8)  // bit_rate_scale, cpb_size_scale
            if subPicture { try reader.skip(4) }
            try reader.skip(15)
        }
        for _ in 0...maxSubLayersMinus1 {
            let fixedGeneral = try reader.flag()
            let fixedWithinCVS = fixedGeneral ? true : try reader.flag()
            var lowDelay = false
            if fixedWithinCVS { _ = try reader.unsignedExpGolomb() } else { lowDelay = try reader.flag() }
            let cpbCount = lowDelay ? 1 : try reader.unsignedExpGolomb("cpb_cnt_minus1", max: 31) + 1
            for present in [nal, vcl] where present {
                for _ in 0..<cpbCount {
                    for _ in 0..<(subPicture ? 4 : 2) { _ = try reader.unsignedExpGolomb() }
                    try reader.skip(1)  // cbr_flag
                }
            }
        }
    }
}

/// A picture parameter set (H.265 §7.3.2.3): every field a slice segment header depends on.
public struct HEVCPictureParameterSet: Sendable, Equatable {
    /// `pps_pic_parameter_set_id`.
    public var id: Int
    /// `pps_seq_parameter_set_id`.
    public var spsID: Int
    /// `dependent_slice_segments_enabled_flag`.
    public var dependentSliceSegments: Bool
    /// `output_flag_present_flag`.
    public var outputFlagPresent: Bool
    /// `num_extra_slice_header_bits`.
    public var extraSliceHeaderBits: Int
    /// `cabac_init_present_flag`.
    public var cabacInitPresent: Bool
    /// `num_ref_idx_l0_default_active_minus1` + 1.
    public var defaultActiveReferencesL0: Int
    /// `num_ref_idx_l1_default_active_minus1` + 1.
    public var defaultActiveReferencesL1: Int
    /// `pps_slice_chroma_qp_offsets_present_flag`.
    public var sliceChromaQPOffsetsPresent: Bool
    /// `weighted_pred_flag`.
    public var weightedPrediction: Bool
    /// `weighted_bipred_flag`.
    public var weightedBiprediction: Bool
    /// `tiles_enabled_flag`.
    public var tiles: Bool
    /// `entropy_coding_sync_enabled_flag` (wavefront parallel processing).
    public var entropyCodingSync: Bool
    /// `pps_loop_filter_across_slices_enabled_flag`.
    public var loopFilterAcrossSlices: Bool
    /// `deblocking_filter_override_enabled_flag`.
    public var deblockingFilterOverride: Bool
    /// `pps_deblocking_filter_disabled_flag`.
    public var deblockingFilterDisabled: Bool
    /// `lists_modification_present_flag`.
    public var listsModificationPresent: Bool
    /// `slice_segment_header_extension_present_flag`.
    public var sliceHeaderExtensionPresent: Bool
    /// `chroma_qp_offset_list_enabled_flag` of the range extension.
    public var chromaQPOffsetList: Bool

    /// Parses the PPS NAL unit `nal` (header included, stored bytes).
    public init(_ nal: [UInt8], structure: String = "HEVC PPS") throws(FormatError) {
        let header = try HEVCNALHeader(nal, structure: structure)
        func unsupported(_ reason: String) -> FormatError { FormatError(structure, reason, kind: .unsupported) }
        guard header.layerID == 0 else {
            throw unsupported("nuh_layer_id \(header.layerID): only the base layer is packaged")
        }
        var reader = EscapedBitReader(nal, from: 2, structure: structure)
        id = try reader.unsignedExpGolomb("pps_pic_parameter_set_id", max: 63)
        spsID = try reader.unsignedExpGolomb("pps_seq_parameter_set_id", max: 15)
        dependentSliceSegments = try reader.flag()
        outputFlagPresent = try reader.flag()
        extraSliceHeaderBits = Int(try reader.read(3))
        try reader.skip(1)  // sign_data_hiding_enabled_flag
        cabacInitPresent = try reader.flag()
        defaultActiveReferencesL0 = try reader.unsignedExpGolomb("num_ref_idx_l0_default_active_minus1", max: 14) + 1
        defaultActiveReferencesL1 = try reader.unsignedExpGolomb("num_ref_idx_l1_default_active_minus1", max: 14) + 1
        _ = try reader.signedExpGolomb()  // init_qp_minus26
        try reader.skip(1)  // constrained_intra_pred_flag
        let transformSkip = try reader.flag()
        if try reader.flag() { _ = try reader.unsignedExpGolomb() }  // cu_qp_delta_enabled_flag, diff_cu_qp_delta_depth
        _ = try reader.signedExpGolomb()  // pps_cb_qp_offset
        _ = try reader.signedExpGolomb()  // pps_cr_qp_offset
        sliceChromaQPOffsetsPresent = try reader.flag()
        weightedPrediction = try reader.flag()
        weightedBiprediction = try reader.flag()
        try reader.skip(1)  // transquant_bypass_enabled_flag
        tiles = try reader.flag()
        entropyCodingSync = try reader.flag()
        if tiles {
            let columns = try reader.unsignedExpGolomb("num_tile_columns_minus1", max: 19) + 1
            let rows = try reader.unsignedExpGolomb("num_tile_rows_minus1", max: 21) + 1
            if !(try reader.flag()) {  // uniform_spacing_flag
                for _ in 0..<(columns - 1) { _ = try reader.unsignedExpGolomb() }
                for _ in 0..<(rows - 1) { _ = try reader.unsignedExpGolomb() }
            }
            try reader.skip(1)  // loop_filter_across_tiles_enabled_flag
        }
        loopFilterAcrossSlices = try reader.flag()
        deblockingFilterOverride = false
        deblockingFilterDisabled = false
        if try reader.flag() {  // deblocking_filter_control_present_flag
            deblockingFilterOverride = try reader.flag()
            deblockingFilterDisabled = try reader.flag()
            if !deblockingFilterDisabled {
                _ = try reader.signedExpGolomb()
                _ = try reader.signedExpGolomb()
            }
        }
        if try reader.flag() { try HEVCSequenceParameterSet.skipScalingListData(&reader) }
        listsModificationPresent = try reader.flag()
        _ = try reader.unsignedExpGolomb()  // log2_parallel_merge_level_minus2
        sliceHeaderExtensionPresent = try reader.flag()
        chromaQPOffsetList = false
        if try reader.flag() {  // pps_extension_present_flag
            let range = try reader.flag()
            let multilayer = try reader.flag()
            let threeD = try reader.flag()
            let screenContent = try reader.flag()
            let more = try reader.read(4)
            if multilayer || threeD { throw unsupported("a multilayer or 3D PPS extension (MV-HEVC, 3D-HEVC)") }
            if screenContent { throw unsupported("the screen content coding PPS extension") }
            if more != 0 { throw unsupported("pps_extension_4bits \(more): extensions newer than H.265 v4") }
            if range {
                if transformSkip { _ = try reader.unsignedExpGolomb() }  // log2_max_transform_skip_block_size_minus2
                try reader.skip(1)  // cross_component_prediction_enabled_flag
                chromaQPOffsetList = try reader.flag()
            }
        }
    }
}
