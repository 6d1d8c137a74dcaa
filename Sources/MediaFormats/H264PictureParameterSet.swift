/// The fields of an H.264 picture parameter set (H.264 §7.3.2.2) that a slice header's layout depends on.
public struct H264PictureParameterSet: Equatable {
    public var id: UInt32
    var sequenceParameterSetID: UInt32
    var entropyCodingModeCABAC: Bool
    var bottomFieldPictureOrderInFramePresent: Bool
    var sliceGroupCount: Int
    var sliceGroupMapType: UInt32
    /// SliceGroupChangeRate (map types 3–5).
    var sliceGroupChangeRate: Int
    var defaultReferenceCountL0: Int
    var defaultReferenceCountL1: Int
    var weightedPrediction: Bool
    var weightedBipredictionIDC: UInt32
    var deblockingFilterControlPresent: Bool
    var redundantPictureCountPresent: Bool

    /// Parses `nal`, an escaped PPS NAL unit starting with its header byte.
    public init(nal: [UInt8]) throws(FormatError) {
        let structure = "H.264 PPS"
        guard let header = nal.first, NALUnitType.of(header) == NALUnitType.pictureParameterSet else {
            throw FormatError(structure, "not a picture parameter set")
        }
        var bits = BitReader(EmulationPrevention.unescaped(Array(nal.dropFirst())), structure: structure)
        id = try bits.unsignedExpGolomb()
        sequenceParameterSetID = try bits.unsignedExpGolomb()
        guard id <= 255, sequenceParameterSetID <= 31 else {
            throw FormatError(structure, "parameter set ID \(id) or SPS ID \(sequenceParameterSetID) out of range")
        }
        entropyCodingModeCABAC = try bits.flag()
        bottomFieldPictureOrderInFramePresent = try bits.flag()
        let groups = try bits.unsignedExpGolomb()
        guard groups <= 7 else { throw FormatError(structure, "\(groups + 1) slice groups") }
        sliceGroupCount = Int(groups) + 1
        sliceGroupMapType = 0
        sliceGroupChangeRate = 1
        if groups > 0 {
            sliceGroupMapType = try bits.unsignedExpGolomb()
            switch sliceGroupMapType {
            case 0:
                for _ in 0...groups { _ = try bits.unsignedExpGolomb() }  // run_length_minus1
            case 2:
                for _ in 0..<groups {
                    _ = try bits.unsignedExpGolomb()  // top_left
                    _ = try bits.unsignedExpGolomb()  // bottom_right
                }
            case 3, 4, 5:
                try bits.skip(1)  // slice_group_change_direction_flag
                sliceGroupChangeRate = Int(try bits.unsignedExpGolomb()) + 1
            case 6:
                let units = Int(try bits.unsignedExpGolomb()) + 1
                var width = 0
                while (1 << width) < sliceGroupCount { width += 1 }
                try bits.skip(units * width)  // slice_group_id
            case 1:
                break
            default:
                throw FormatError(structure, "slice_group_map_type \(sliceGroupMapType)")
            }
        }
        let l0 = try bits.unsignedExpGolomb()
        let l1 = try bits.unsignedExpGolomb()
        guard l0 <= 31, l1 <= 31 else { throw FormatError(structure, "more than 32 default reference indices") }
        defaultReferenceCountL0 = Int(l0) + 1
        defaultReferenceCountL1 = Int(l1) + 1
        weightedPrediction = try bits.flag()
        weightedBipredictionIDC = try bits.read(2)
        _ = try bits.signedExpGolomb()  // pic_init_qp_minus26
        _ = try bits.signedExpGolomb()  // pic_init_qs_minus26
        _ = try bits.signedExpGolomb()  // chroma_qp_index_offset
        deblockingFilterControlPresent = try bits.flag()
        try bits.skip(1)  // constrained_intra_pred_flag
        redundantPictureCountPresent = try bits.flag()
    }
}
