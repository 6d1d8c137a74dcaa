import MediaFormats

/// The HEVC half of `package-verify`: a random valid HEVC stream whose coding tools are drawn from the
/// input (each one changes what a slice segment header holds), written syntax element by syntax element
/// as H.265 §7.3 lays them out. The writer knows where each slice segment header ends, so the clear
/// bytes the packager's `HEVCSampleBuilder` computes by parsing are checked against the truth, not
/// against the same parser.
extension DifferentialFuzzing {
    /// The coding tools of one stream: the fields of its VPS, SPS and PPS that slice segment headers
    /// depend on.
    struct HEVCTools {
        var widthCTBs = 1
        var heightCTBs = 1
        var chroma = true
        var log2POCLSB = 4
        /// The SPS's short-term reference picture sets, each of one previous picture, used.
        var shortTermSets = 0
        var longTermPresent = false
        /// `used_by_curr_pic_lt_sps_flag` of each long-term candidate in the SPS.
        var longTermCandidates: [Bool] = []
        var temporalMVP = false
        var sampleAdaptiveOffset = false
        var dependentSlices = false
        var outputFlagPresent = false
        var extraSliceHeaderBits = 0
        var cabacInitPresent = false
        var defaultReferencesL0 = 1
        var sliceChromaQPOffsets = false
        var weightedPrediction = false
        var tiles = false
        var entropyCodingSync = false
        var loopFilterAcrossSlices = false
        var deblockingControl = false
        var deblockingOverride = false
        var deblockingDisabled = false
        var listsModification = false
        var headerExtension = false

        /// CTBs are 16 luma samples square.
        var pictureSizeInCTBs: Int { widthCTBs * heightCTBs }

        init(_ input: inout FuzzBytes) {
            widthCTBs = input.int(in: 1...40)
            heightCTBs = input.int(in: 1...23)
            chroma = input.int(in: 0...7) != 0
            log2POCLSB = input.int(in: 4...16)
            shortTermSets = input.int(in: 0...4)
            longTermPresent = input.bool()
            if longTermPresent { longTermCandidates = (0..<input.int(in: 0...3)).map { _ in input.bool() } }
            temporalMVP = input.bool()
            sampleAdaptiveOffset = input.bool()
            dependentSlices = input.bool()
            outputFlagPresent = input.bool()
            extraSliceHeaderBits = input.int(in: 0...2)
            cabacInitPresent = input.bool()
            defaultReferencesL0 = input.int(in: 1...3)
            sliceChromaQPOffsets = input.bool()
            weightedPrediction = input.bool()
            tiles = input.bool()
            entropyCodingSync = input.bool()
            loopFilterAcrossSlices = input.bool()
            deblockingControl = input.bool()
            deblockingOverride = input.bool()
            deblockingDisabled = input.bool()
            listsModification = input.bool()
            headerExtension = input.bool()
        }
    }

    /// One HEVC access unit: Annex-B bytes, its NAL units' ranges, and the sample the packager must
    /// make of it with each NAL unit's stored size and clear bytes.
    struct HEVCAccessUnit {
        var bytes: [UInt8]
        var nalUnits: [Range<Int>]
        var isSync: Bool
        var sample: [UInt8]
        var units: [(size: Int, clear: Int)]
    }

    /// `count` as the bits of a `u(v)` field that indexes `count` entries: `Ceil(Log2(count))`.
    static func indexBits(_ count: Int) -> Int {
        var bits = 0
        while (1 << bits) < count { bits += 1 }
        return bits
    }

    /// The NAL unit of `type` over `rbsp`, escaped by a writer of its own that also says where the
    /// first `headerBytes` RBSP bytes end in the stored bytes (an emulation prevention byte after them
    /// not included), and the number of stored bytes including the two-byte NAL header.
    static func hevcNAL(_ type: UInt8, rbsp: [UInt8], headerBytes: Int) -> (nal: [UInt8], headerEnd: Int) {
        var stored: [UInt8] = [type << 1, 0x01]
        stored.reserveCapacity(2 + rbsp.count + rbsp.count / 2)
        var zeros = 0
        var headerEnd = 2
        for (index, byte) in rbsp.enumerated() {
            if zeros >= 2 && byte <= 3 {
                stored.append(3)
                zeros = 0
            }
            stored.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
            if index == headerBytes - 1 { headerEnd = stored.count }
        }
        precondition(Array(stored.dropFirst(2)) == EmulationPrevention.escaped(rbsp), "emulation prevention")
        return (stored, headerEnd)
    }

    /// `profile_tier_level(1, 0)`: Main profile, Main tier, level 3.1, progressive frames.
    static func profileTierLevel(_ syntax: inout SyntaxWriter) {
        syntax.u(0, 2)  // general_profile_space
        syntax.u(0, 1)  // general_tier_flag
        syntax.u(1, 5)  // general_profile_idc: Main
        syntax.u(0x6000, 16)  // general_profile_compatibility_flag[1] and [2]
        syntax.u(0, 16)
        syntax.u(0x90, 8)  // progressive_source_flag, frame_only_constraint_flag
        for _ in 0..<5 { syntax.u(0, 8) }
        syntax.u(93, 8)  // general_level_idc
    }

    static func videoParameterSet() -> [UInt8] {
        var vps = SyntaxWriter()
        vps.u(0, 4)  // vps_video_parameter_set_id
        vps.u(3, 2)  // vps_base_layer_internal_flag, vps_base_layer_available_flag
        vps.u(0, 6)  // vps_max_layers_minus1
        vps.u(0, 3)  // vps_max_sub_layers_minus1
        vps.u(1, 1)  // vps_temporal_id_nesting_flag
        vps.u(0xFFFF, 16)
        profileTierLevel(&vps)
        vps.u(1, 1)  // vps_sub_layer_ordering_info_present_flag
        vps.ue(4)  // vps_max_dec_pic_buffering_minus1
        vps.ue(0)  // vps_max_num_reorder_pics
        vps.ue(0)  // vps_max_latency_increase_plus1
        vps.u(0, 6)  // vps_max_layer_id
        vps.ue(0)  // vps_num_layer_sets_minus1
        vps.u(0, 1)  // vps_timing_info_present_flag
        vps.u(0, 1)  // vps_extension_flag
        let rbsp = vps.aligned()
        return hevcNAL(HEVCNALHeader.vps, rbsp: rbsp, headerBytes: rbsp.count).nal
    }

    static func sequenceParameterSet(_ tools: HEVCTools) -> [UInt8] {
        var sps = SyntaxWriter()
        sps.u(0, 4)  // sps_video_parameter_set_id
        sps.u(0, 3)  // sps_max_sub_layers_minus1
        sps.u(1, 1)  // sps_temporal_id_nesting_flag
        profileTierLevel(&sps)
        sps.ue(0)  // sps_seq_parameter_set_id
        sps.ue(tools.chroma ? 1 : 0)  // chroma_format_idc
        sps.ue(tools.widthCTBs * 16)
        sps.ue(tools.heightCTBs * 16)
        sps.u(0, 1)  // conformance_window_flag
        sps.ue(0)  // bit_depth_luma_minus8
        sps.ue(0)  // bit_depth_chroma_minus8
        sps.ue(tools.log2POCLSB - 4)
        sps.u(1, 1)  // sps_sub_layer_ordering_info_present_flag
        sps.ue(4)
        sps.ue(0)
        sps.ue(0)
        sps.ue(0)  // log2_min_luma_coding_block_size_minus3: 8
        sps.ue(1)  // log2_diff_max_min_luma_coding_block_size: CTBs of 16
        sps.ue(0)  // log2_min_luma_transform_block_size_minus2
        sps.ue(2)  // log2_diff_max_min_luma_transform_block_size
        sps.ue(1)  // max_transform_hierarchy_depth_inter
        sps.ue(1)  // max_transform_hierarchy_depth_intra
        sps.u(0, 1)  // scaling_list_enabled_flag
        sps.u(0, 1)  // amp_enabled_flag
        sps.u(tools.sampleAdaptiveOffset ? 1 : 0, 1)
        sps.u(0, 1)  // pcm_enabled_flag
        sps.ue(tools.shortTermSets)
        for index in 0..<tools.shortTermSets { shortTermSet(&sps, index: index, distance: index + 1) }
        sps.u(tools.longTermPresent ? 1 : 0, 1)
        if tools.longTermPresent {
            sps.ue(tools.longTermCandidates.count)
            for (index, used) in tools.longTermCandidates.enumerated() {
                sps.u(index * 7, tools.log2POCLSB)  // lt_ref_pic_poc_lsb_sps
                sps.u(used ? 1 : 0, 1)
            }
        }
        sps.u(tools.temporalMVP ? 1 : 0, 1)
        sps.u(0, 1)  // strong_intra_smoothing_enabled_flag
        sps.u(0, 1)  // vui_parameters_present_flag
        sps.u(0, 1)  // sps_extension_present_flag
        let rbsp = sps.aligned()
        return hevcNAL(HEVCNALHeader.sps, rbsp: rbsp, headerBytes: rbsp.count).nal
    }

    /// `st_ref_pic_set(index)`, not predicted: one previous picture, `distance` back, used.
    static func shortTermSet(_ syntax: inout SyntaxWriter, index: Int, distance: Int) {
        if index != 0 { syntax.u(0, 1) }  // inter_ref_pic_set_prediction_flag
        syntax.ue(1)  // num_negative_pics
        syntax.ue(0)  // num_positive_pics
        syntax.ue(distance - 1)  // delta_poc_s0_minus1
        syntax.u(1, 1)  // used_by_curr_pic_s0_flag
    }

    static func pictureParameterSet(_ tools: HEVCTools, input: inout FuzzBytes) -> [UInt8] {
        var pps = SyntaxWriter()
        pps.ue(0)  // pps_pic_parameter_set_id
        pps.ue(0)  // pps_seq_parameter_set_id
        pps.u(tools.dependentSlices ? 1 : 0, 1)
        pps.u(tools.outputFlagPresent ? 1 : 0, 1)
        pps.u(tools.extraSliceHeaderBits, 3)
        pps.u(0, 1)  // sign_data_hiding_enabled_flag
        pps.u(tools.cabacInitPresent ? 1 : 0, 1)
        pps.ue(tools.defaultReferencesL0 - 1)
        pps.ue(0)  // num_ref_idx_l1_default_active_minus1
        pps.se(input.int(in: 0...20) - 10)  // init_qp_minus26
        pps.u(0, 1)  // constrained_intra_pred_flag
        pps.u(0, 1)  // transform_skip_enabled_flag
        pps.u(0, 1)  // cu_qp_delta_enabled_flag
        pps.se(0)  // pps_cb_qp_offset
        pps.se(0)  // pps_cr_qp_offset
        pps.u(tools.sliceChromaQPOffsets ? 1 : 0, 1)
        pps.u(tools.weightedPrediction ? 1 : 0, 1)
        pps.u(0, 1)  // weighted_bipred_flag
        pps.u(0, 1)  // transquant_bypass_enabled_flag
        pps.u(tools.tiles ? 1 : 0, 1)
        pps.u(tools.entropyCodingSync ? 1 : 0, 1)
        if tools.tiles {
            pps.ue(input.int(in: 0...min(tools.widthCTBs - 1, 3)))  // num_tile_columns_minus1
            pps.ue(input.int(in: 0...min(tools.heightCTBs - 1, 3)))  // num_tile_rows_minus1
            pps.u(1, 1)  // uniform_spacing_flag
            pps.u(1, 1)  // loop_filter_across_tiles_enabled_flag
        }
        pps.u(tools.loopFilterAcrossSlices ? 1 : 0, 1)
        pps.u(tools.deblockingControl ? 1 : 0, 1)
        if tools.deblockingControl {
            pps.u(tools.deblockingOverride ? 1 : 0, 1)
            pps.u(tools.deblockingDisabled ? 1 : 0, 1)
            if !tools.deblockingDisabled {
                pps.se(input.int(in: 0...12) - 6)  // pps_beta_offset_div2
                pps.se(input.int(in: 0...12) - 6)  // pps_tc_offset_div2
            }
        }
        pps.u(0, 1)  // pps_scaling_list_data_present_flag
        pps.u(tools.listsModification ? 1 : 0, 1)
        pps.ue(0)  // log2_parallel_merge_level_minus2
        pps.u(tools.headerExtension ? 1 : 0, 1)
        pps.u(0, 1)  // pps_extension_present_flag
        let rbsp = pps.aligned()
        return hevcNAL(HEVCNALHeader.pps, rbsp: rbsp, headerBytes: rbsp.count).nal
    }

    /// What the independent slice segment of a picture decided, which its dependent segments inherit.
    struct HEVCPicture {
        var type: UInt8
        var isIDR: Bool { type == 19 || type == 20 }
        var isIRAP: Bool { (16...23).contains(type) }
        var pictureOrderCount: Int
    }

    /// One slice segment header, from `first_slice_segment_in_pic_flag` to `byte_alignment()`.
    static func sliceSegmentHeader(
        _ tools: HEVCTools, picture: HEVCPicture, address: Int, dependent: Bool, input: inout FuzzBytes
    ) -> [UInt8] {
        var slice = SyntaxWriter()
        slice.u(address == 0 ? 1 : 0, 1)  // first_slice_segment_in_pic_flag
        if picture.isIRAP { slice.u(0, 1) }  // no_output_of_prior_pics_flag
        slice.ue(0)  // slice_pic_parameter_set_id
        if address != 0 {
            if tools.dependentSlices { slice.u(dependent ? 1 : 0, 1) }
            slice.u(address, indexBits(tools.pictureSizeInCTBs))
        }
        if !dependent {
            for _ in 0..<tools.extraSliceHeaderBits { slice.u(input.int(in: 0...1), 1) }  // slice_reserved_flag
            // I pictures are IRAP, or drawn; a P slice needs a reference picture set that uses a picture.
            let predicted = !picture.isIRAP && input.int(in: 0...3) != 0
            slice.ue(predicted ? 1 : 2)  // slice_type
            if tools.outputFlagPresent { slice.u(1, 1) }  // pic_output_flag
            var pictureTotalCurrent = 0
            var temporalMVP = false
            if !picture.isIDR {
                slice.u(picture.pictureOrderCount % (1 << tools.log2POCLSB), tools.log2POCLSB)
                if tools.shortTermSets > 0 && input.bool() {
                    slice.u(1, 1)  // short_term_ref_pic_set_sps_flag
                    slice.u(input.int(in: 0...(tools.shortTermSets - 1)), indexBits(tools.shortTermSets))
                } else {
                    slice.u(0, 1)
                    shortTermSet(&slice, index: tools.shortTermSets, distance: input.int(in: 1...3))
                }
                pictureTotalCurrent = 1
                if tools.longTermPresent {
                    let fromSPS = input.int(in: 0...min(2, tools.longTermCandidates.count))
                    if !tools.longTermCandidates.isEmpty { slice.ue(fromSPS) }  // num_long_term_sps
                    let pictures = input.int(in: 0...2)
                    slice.ue(pictures)  // num_long_term_pics
                    for index in 0..<(fromSPS + pictures) {
                        if index < fromSPS {
                            let candidate = input.int(in: 0...(tools.longTermCandidates.count - 1))
                            slice.u(candidate, indexBits(tools.longTermCandidates.count))  // lt_idx_sps
                            if tools.longTermCandidates[candidate] { pictureTotalCurrent += 1 }
                        } else {
                            slice.u(input.int(in: 0...((1 << tools.log2POCLSB) - 1)), tools.log2POCLSB)
                            let used = input.bool()
                            slice.u(used ? 1 : 0, 1)  // used_by_curr_pic_lt_flag
                            if used { pictureTotalCurrent += 1 }
                        }
                        let msb = input.bool()
                        slice.u(msb ? 1 : 0, 1)  // delta_poc_msb_present_flag
                        if msb { slice.ue(input.int(in: 0...40)) }  // delta_poc_msb_cycle_lt
                    }
                }
                if tools.temporalMVP {
                    temporalMVP = input.bool()
                    slice.u(temporalMVP ? 1 : 0, 1)
                }
            }
            var saoUsed = false
            if tools.sampleAdaptiveOffset {
                let luma = input.bool()
                slice.u(luma ? 1 : 0, 1)
                var chroma = false
                if tools.chroma {
                    chroma = input.bool()
                    slice.u(chroma ? 1 : 0, 1)
                }
                saoUsed = luma || chroma
            }
            if predicted {
                var references = tools.defaultReferencesL0
                let override = input.bool()
                slice.u(override ? 1 : 0, 1)  // num_ref_idx_active_override_flag
                if override {
                    references = input.int(in: 1...4)
                    slice.ue(references - 1)
                }
                if tools.listsModification && pictureTotalCurrent > 1 {
                    let modified = input.bool()
                    slice.u(modified ? 1 : 0, 1)  // ref_pic_list_modification_flag_l0
                    if modified {
                        for _ in 0..<references {
                            slice.u(input.int(in: 0...(pictureTotalCurrent - 1)), indexBits(pictureTotalCurrent))
                        }
                    }
                }
                if tools.cabacInitPresent { slice.u(input.int(in: 0...1), 1) }  // cabac_init_flag
                // collocated_ref_idx
                if temporalMVP && references > 1 { slice.ue(input.int(in: 0...(references - 1))) }
                if tools.weightedPrediction {
                    slice.ue(input.int(in: 0...7))  // luma_log2_weight_denom
                    if tools.chroma { slice.se(input.int(in: 0...6) - 3) }  // delta_chroma_log2_weight_denom
                    let luma = (0..<references).map { _ in input.bool() }
                    let chroma = (0..<references).map { _ in tools.chroma && input.bool() }
                    for flag in luma { slice.u(flag ? 1 : 0, 1) }
                    if tools.chroma { for flag in chroma { slice.u(flag ? 1 : 0, 1) } }
                    for index in 0..<references {
                        if luma[index] {
                            slice.se(input.int(in: 0...20) - 10)  // delta_luma_weight_l0
                            slice.se(input.int(in: 0...40) - 20)  // luma_offset_l0
                        }
                        if chroma[index] {
                            for _ in 0..<4 { slice.se(input.int(in: 0...20) - 10) }
                        }
                    }
                }
                slice.ue(input.int(in: 0...4))  // five_minus_max_num_merge_cand
            }
            slice.se(input.int(in: 0...30) - 15)  // slice_qp_delta
            if tools.sliceChromaQPOffsets {
                slice.se(input.int(in: 0...8) - 4)
                slice.se(input.int(in: 0...8) - 4)
            }
            var deblockingDisabled = tools.deblockingControl && tools.deblockingDisabled
            if tools.deblockingOverride && tools.deblockingControl {
                let override = input.bool()
                slice.u(override ? 1 : 0, 1)  // deblocking_filter_override_flag
                if override {
                    deblockingDisabled = input.bool()
                    slice.u(deblockingDisabled ? 1 : 0, 1)
                    if !deblockingDisabled {
                        slice.se(input.int(in: 0...12) - 6)
                        slice.se(input.int(in: 0...12) - 6)
                    }
                }
            }
            if tools.loopFilterAcrossSlices && (saoUsed || !deblockingDisabled) { slice.u(input.int(in: 0...1), 1) }
        }
        if tools.tiles || tools.entropyCodingSync {
            let entryPoints = input.int(in: 0...3)
            slice.ue(entryPoints)  // num_entry_point_offsets
            if entryPoints > 0 {
                let length = input.int(in: 1...32)
                slice.ue(length - 1)  // offset_len_minus1
                for _ in 0..<entryPoints {
                    let offset = UInt32(truncatingIfNeeded: input.integer(4))
                    slice.u(Int(offset), length)
                }
            }
        }
        if tools.headerExtension {
            let length = input.int(in: 0...4)
            slice.ue(length)  // slice_segment_header_extension_length
            for _ in 0..<length { slice.u(Int(input.byte()), 8) }
        }
        return slice.aligned()
    }

    /// Up to 10 access units: an IDR picture first, then IDR, CRA or trailing pictures, each of 1–3
    /// slice segments with random slice data, sometimes after an SEI; the VPS, SPS and PPS before
    /// every IRAP picture.
    static func hevcAccessUnits(_ input: inout FuzzBytes) -> [HEVCAccessUnit] {
        let tools = HEVCTools(&input)
        let parameterSets = [
            videoParameterSet(), sequenceParameterSet(tools), pictureParameterSet(tools, input: &input),
        ]
        var units: [HEVCAccessUnit] = []
        for index in 0..<input.int(in: 1...10) {
            let type: UInt8 = index == 0 ? 19 : input.pick([1, 1, 1, 0, 19, 20, 21])
            let picture = HEVCPicture(type: type, pictureOrderCount: index)
            // Each NAL unit with its clear bytes in the sample (nil: not in the sample).
            var nals: [(nal: [UInt8], clear: Int?)] = [([HEVCNALHeader.accessUnitDelimiter << 1, 0x01, 0x50], nil)]
            if picture.isIRAP { nals += parameterSets.map { ($0, nil) } }
            if input.int(in: 0...3) == 0 {
                // A prefix SEI of user data unregistered: payload type 5, a UUID and random bytes.
                let body = input.bytes(16 + input.int(in: 0...30))
                let rbsp = [5, UInt8(body.count)] + body + [0x80]
                let sei = hevcNAL(HEVCNALHeader.prefixSEI, rbsp: rbsp, headerBytes: rbsp.count).nal
                nals.append((sei, sei.count))
            }
            let segments = min(input.int(in: 1...3), tools.pictureSizeInCTBs)
            var addresses = [0]
            for _ in 1..<max(segments, 1) {
                let next = addresses.last! + 1
                guard next < tools.pictureSizeInCTBs else { break }
                addresses.append(input.int(in: next...min(next + 20, tools.pictureSizeInCTBs - 1)))
            }
            for address in addresses {
                let dependent = address != 0 && tools.dependentSlices && input.bool()
                let header = sliceSegmentHeader(
                    tools, picture: picture, address: address, dependent: dependent, input: &input)
                // Slice data: random bytes with runs of zeros, so emulation prevention falls anywhere,
                // also right after the header; then rbsp_slice_segment_trailing_bits().
                let length = input.int(in: 0...3) == 0 ? input.int(in: 0...2_000) : input.int(in: 0...200)
                let data = (0..<length).map { _ in input.int(in: 0...3) == 0 ? 0 : input.byte() }
                let (nal, headerEnd) = hevcNAL(type, rbsp: header + data + [0x80], headerBytes: header.count)
                nals.append((nal, headerEnd))
            }
            var bytes: [UInt8] = []
            var sample: [UInt8] = []
            var expected: [(size: Int, clear: Int)] = []
            for (nal, clear) in nals {
                bytes += [0, 0, 0, 1] + nal
                // The packager drops the delimiter and the parameter sets (they go to hvcC), keeps the rest
                // length-prefixed: an SEI clear, a slice segment clear to the end of its header.
                guard let clear else { continue }
                sample.appendBigEndian(UInt32(nal.count))
                sample += nal
                expected.append((4 + nal.count, 4 + clear))
            }
            let ranges = bytes.withUnsafeBytes { NALUnitSplitter.annexB($0) }
            units.append(
                HEVCAccessUnit(
                    bytes: bytes, nalUnits: ranges, isSync: picture.isIRAP, sample: sample, units: expected))
        }
        return units
    }

    /// Packages `video` as CMAF with `scheme` through `HEVCSampleBuilder`, checking each sample and its
    /// clear bytes against the writer's, then reads it back as `verify` does.
    static func fragmentedHEVC(_ video: [HEVCAccessUnit], scheme: CENCScheme, fragmentLength: Int) {
        var builder = HEVCSampleBuilder()
        var clear: [[UInt8]] = []
        var records: [FragmentSample] = []
        var ivs = IVCounter(value: 0x1122_3344_5566_7788)
        for (index, unit) in video.enumerated() {
            let sample: (bytes: [UInt8], units: [(size: Int, clear: Int)])
            do { sample = try builder.sample(bytes: unit.bytes, nalUnits: unit.nalUnits) } catch {
                preconditionFailure("HEVC access unit \(index) is refused by the sample builder: \(error)")
            }
            precondition(sample.bytes == unit.sample, "HEVC sample \(index) is not the access unit's NAL units")
            precondition(
                sample.units.map(\.size) == unit.units.map(\.size)
                    && sample.units.map(\.clear) == unit.units.map(\.clear),
                "HEVC sample \(index): clear bytes \(sample.units.map(\.clear)), the headers end at \(unit.units.map(\.clear))"
            )
            clear.append(sample.bytes)
            records.append(
                FragmentSample(
                    size: sample.bytes.count, duration: 3_000, isSync: unit.isSync,
                    iv: scheme == .cenc ? ivs.next() : [],
                    subsamples: SubsampleMap.make(sample.units, scheme: scheme)))
        }
        let configuration: HEVCDecoderConfiguration
        let sps: HEVCSequenceParameterSet
        do {
            configuration = try builder.configuration()
            sps = try HEVCSequenceParameterSet(configuration.nalUnits[1])
        } catch {
            preconditionFailure("the builder's hvcC: \(error)")
        }
        guard let serialized = try? configuration.serialized() else { preconditionFailure("hvcC does not serialise") }
        let track = FragmentedTrack(
            media: .hevc(width: sps.width, height: sps.height, configuration: serialized), timescale: 90_000,
            encryption: videoEncryption(scheme))
        roundTrip(track, clear: clear, records: records, fragmentLength: fragmentLength)
    }
}
