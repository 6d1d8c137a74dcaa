/// The two-byte HEVC NAL unit header (H.265 §7.3.1.2) and the unit types GuardPlay looks at.
public struct HEVCNALHeader: Sendable, Equatable {
    /// `nal_unit_type`, 0…63.
    public var type: UInt8
    /// `nuh_layer_id`, 0 for the base layer.
    public var layerID: UInt8
    /// `nuh_temporal_id_plus1` − 1.
    public var temporalID: UInt8

    /// Video parameter set.
    public static let vps: UInt8 = 32
    /// Sequence parameter set.
    public static let sps: UInt8 = 33
    /// Picture parameter set.
    public static let pps: UInt8 = 34
    /// Access unit delimiter.
    public static let accessUnitDelimiter: UInt8 = 35
    /// Prefix SEI.
    public static let prefixSEI: UInt8 = 39
    /// Suffix SEI.
    public static let suffixSEI: UInt8 = 40

    /// The header at the start of `nal`; throws when it is shorter than two bytes, its forbidden bit is
    /// set or its temporal ID is invalid.
    public init(_ nal: [UInt8], structure: String) throws(FormatError) {
        try self.init(count: nal.count, nal.first ?? 0, nal.count > 1 ? nal[1] : 0, structure: structure)
    }

    /// The header at the start of `nal`, checked as `init(_:structure:)` checks an array's.
    public init(_ nal: UnsafeRawBufferPointer, structure: String) throws(FormatError) {
        try self.init(count: nal.count, nal.first ?? 0, nal.count > 1 ? nal[1] : 0, structure: structure)
    }

    private init(count: Int, _ first: UInt8, _ second: UInt8, structure: String) throws(FormatError) {
        guard count >= 2 else { throw FormatError(structure, "a NAL unit of \(count) bytes has no header") }
        guard first & 0x80 == 0 else { throw FormatError(structure, "forbidden_zero_bit is set") }
        type = Self.type(of: first)
        layerID = (first & 1) << 5 | second >> 3
        guard second & 7 != 0 else { throw FormatError(structure, "nuh_temporal_id_plus1 is 0") }
        temporalID = (second & 7) - 1
    }

    /// `nal_unit_type` from a NAL unit's first byte, with nothing checked.
    public static func type(of firstByte: UInt8) -> UInt8 { (firstByte >> 1) & 0x3F }

    /// The parameter set types, VPS, SPS and PPS (32…34), in the order `hvcC` lists them.
    public static let parameterSetTypes = vps...pps

    /// True for a slice segment (VCL types 0…31).
    public var isVCL: Bool { type < 32 }
    /// True for a VPS, SPS or PPS.
    public var isParameterSet: Bool { Self.parameterSetTypes.contains(type) }
    /// True for IRAP pictures (BLA, IDR, CRA and reserved IRAP types 16…23).
    public var isIRAP: Bool { (16...23).contains(type) }
    /// True for IDR pictures, whose slices carry no picture order count.
    public var isIDR: Bool { type == 19 || type == 20 }
}
