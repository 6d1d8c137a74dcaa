/// The coded picture size an H.264 sequence parameter set declares (H.264 §7.3.2.1.1), read by the
/// packager itself so that a size FFmpeg cannot decode, or one in an in-band SPS that FFmpeg never
/// probed, is still checked against the picture-size limit.
public struct H264SequenceParameterSet: Equatable, Sendable {
    /// Width in pixels: `(pic_width_in_mbs_minus1 + 1) × 16`, before cropping.
    public var width: Int
    /// Height in pixels: map units × 16, doubled for field coding, before cropping.
    public var height: Int

    /// Profiles whose SPS carries chroma format, bit depths and scaling matrices.
    private static let highProfiles: Set<UInt32> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// Parses `nal`, an escaped SPS NAL unit starting with its header byte.
    public init(nal: [UInt8]) throws(FormatError) {
        let structure = "H.264 SPS"
        guard let header = nal.first, NALUnitType.of(header) == NALUnitType.sequenceParameterSet else {
            throw FormatError(structure, "not a sequence parameter set")
        }
        var bits = BitReader(EmulationPrevention.unescaped(Array(nal.dropFirst())), structure: structure)
        let profile = try bits.read(8)
        try bits.skip(16)  // constraint flags, level_idc
        _ = try bits.unsignedExpGolomb()  // seq_parameter_set_id
        if Self.highProfiles.contains(profile) {
            let chromaFormat = try bits.unsignedExpGolomb()
            if chromaFormat == 3 { try bits.skip(1) }  // separate_colour_plane_flag
            _ = try bits.unsignedExpGolomb()  // bit_depth_luma_minus8
            _ = try bits.unsignedExpGolomb()  // bit_depth_chroma_minus8
            try bits.skip(1)  // qpprime_y_zero_transform_bypass_flag
            if try bits.flag() {  // seq_scaling_matrix_present_flag
                for list in 0..<(chromaFormat == 3 ? 12 : 8) where try bits.flag() {
                    try Self.skipScalingList(&bits, size: list < 6 ? 16 : 64)
                }
            }
        }
        _ = try bits.unsignedExpGolomb()  // log2_max_frame_num_minus4
        switch try bits.unsignedExpGolomb() {  // pic_order_cnt_type
        case 0:
            _ = try bits.unsignedExpGolomb()  // log2_max_pic_order_cnt_lsb_minus4
        case 1:
            try bits.skip(1)  // delta_pic_order_always_zero_flag
            _ = try bits.signedExpGolomb()  // offset_for_non_ref_pic
            _ = try bits.signedExpGolomb()  // offset_for_top_to_bottom_field
            let cycle = try bits.unsignedExpGolomb()
            guard cycle <= 255 else { throw FormatError(structure, "\(cycle) reference frames in a POC cycle") }
            for _ in 0..<cycle { _ = try bits.signedExpGolomb() }
        default:
            break
        }
        _ = try bits.unsignedExpGolomb()  // max_num_ref_frames
        try bits.skip(1)  // gaps_in_frame_num_value_allowed_flag
        let widthInMacroblocks = Int(try bits.unsignedExpGolomb()) + 1
        let heightInMapUnits = Int(try bits.unsignedExpGolomb()) + 1
        let frameMacroblocksOnly = try bits.flag()
        width = widthInMacroblocks * 16
        height = heightInMapUnits * 16 * (frameMacroblocksOnly ? 1 : 2)
    }

    private static func skipScalingList(_ bits: inout BitReader, size: Int) throws(FormatError) {
        var last = 8
        var next = 8
        for _ in 0..<size {
            if next != 0 { next = ((last + Int(try bits.signedExpGolomb())) % 256 + 256) % 256 }
            if next != 0 { last = next }
        }
    }
}
