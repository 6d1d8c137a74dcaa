/// An `HEVCDecoderConfigurationRecord`, the body of an `hvcC` box (ISO/IEC 14496-15 §8.3.3): the
/// profile, tier and level, the picture format and the parameter set NAL units, in arrays by type.
public struct HEVCDecoderConfiguration: Sendable, Equatable {
    /// The general profile, tier and level (sub-layer fields are not carried).
    public var profileTierLevel: HEVCProfileTierLevel
    /// `min_spatial_segmentation_idc`.
    public var minSpatialSegmentation: Int
    /// `parallelismType`: 0 mixed or unknown, 1 slices, 2 tiles, 3 wavefront.
    public var parallelismType: Int
    /// `chromaFormat` (`chroma_format_idc`).
    public var chromaFormat: Int
    /// `bitDepthLumaMinus8` + 8.
    public var bitDepthLuma: Int
    /// `bitDepthChromaMinus8` + 8.
    public var bitDepthChroma: Int
    /// `numTemporalLayers`.
    public var temporalLayers: Int
    /// `temporalIdNested`.
    public var temporalIDNested: Bool
    /// `lengthSizeMinusOne` + 1: the bytes of each sample NAL's length prefix, 1, 2 or 4.
    public var lengthSize: Int
    /// The parameter set and SEI NAL units (stored bytes, header included) in the order carried.
    public var nalUnits: [[UInt8]]

    /// The record for `vps`, `sps` and `pps` (stored NAL units, headers included), with 4-byte lengths.
    /// Throws what the parameter set parsers throw.
    public init(vps: [UInt8], sps: [UInt8], pps: [UInt8]) throws(FormatError) {
        _ = try HEVCVideoParameterSet(vps)
        let sequence = try HEVCSequenceParameterSet(sps)
        let picture = try HEVCPictureParameterSet(pps)
        profileTierLevel = sequence.profileTierLevel
        minSpatialSegmentation = sequence.minSpatialSegmentation
        switch (picture.tiles, picture.entropyCodingSync) {
        case (true, false): parallelismType = 2
        case (false, true): parallelismType = 3
        default: parallelismType = 0
        }
        chromaFormat = sequence.chromaFormat
        bitDepthLuma = sequence.bitDepthLuma
        bitDepthChroma = sequence.bitDepthChroma
        temporalLayers = sequence.maxSubLayers
        temporalIDNested = sequence.temporalIDNesting
        lengthSize = 4
        nalUnits = [vps, sps, pps]
    }

    /// Parses an `hvcC` body; throws a `FormatError` naming `structure` when it is short, of another
    /// version, or holds a NAL unit that overruns it.
    public init(parsing bytes: [UInt8], structure: String = "hvcC") throws(FormatError) {
        guard bytes.count >= 23 else { throw FormatError(structure, "\(bytes.count) bytes, at least 23 expected") }
        guard bytes[0] == 1 else { throw FormatError(structure, "configurationVersion \(bytes[0]), 1 expected") }
        profileTierLevel = HEVCProfileTierLevel(
            profileSpace: bytes[1] >> 6, highTier: bytes[1] & 0x20 != 0, profileIDC: bytes[1] & 0x1F,
            compatibilityFlags: bytes[2..<6].reduce(0) { $0 << 8 | UInt32($1) }, constraintFlags: Array(bytes[6..<12]),
            levelIDC: bytes[12])
        minSpatialSegmentation = Int(bytes[13] & 0x0F) << 8 | Int(bytes[14])
        parallelismType = Int(bytes[15] & 3)
        chromaFormat = Int(bytes[16] & 3)
        bitDepthLuma = Int(bytes[17] & 7) + 8
        bitDepthChroma = Int(bytes[18] & 7) + 8
        temporalLayers = Int(bytes[21] >> 3 & 7)
        temporalIDNested = bytes[21] & 4 != 0
        lengthSize = Int(bytes[21] & 3) + 1
        guard lengthSize != 3 else { throw FormatError(structure, "lengthSizeMinusOne 2: NAL lengths of 3 bytes") }
        nalUnits = []
        var offset = 23
        for array in 0..<Int(bytes[22]) {
            guard offset + 3 <= bytes.count else { throw FormatError(structure, "array \(array) overruns the record") }
            let count = Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            offset += 3
            for unit in 0..<count {
                guard offset + 2 <= bytes.count else {
                    throw FormatError(structure, "NAL unit \(unit) of array \(array) overruns the record")
                }
                let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                offset += 2
                guard length >= 2, offset + length <= bytes.count else {
                    throw FormatError(
                        structure, "NAL unit \(unit) of array \(array): \(length) bytes overrun the record")
                }
                nalUnits.append(Array(bytes[offset..<(offset + length)]))
                offset += length
            }
        }
    }

    /// The record's bytes, the parameter sets in one array per NAL unit type, in the order first seen,
    /// each array marked complete. Throws when a NAL unit or an array is too long for its 16-bit count.
    public func serialized() throws(FormatError) -> [UInt8] {
        let level = profileTierLevel
        var out: [UInt8] = [1, level.profileSpace << 6 | (level.highTier ? 0x20 : 0) | level.profileIDC & 0x1F]
        out.appendBigEndian(level.compatibilityFlags)
        out.append(contentsOf: level.constraintFlags.prefix(6))
        out.append(contentsOf: [UInt8](repeating: 0, count: 6 - min(6, level.constraintFlags.count)))
        out.append(level.levelIDC)
        out.appendBigEndian(UInt16(0xF000 | minSpatialSegmentation & 0x0FFF))
        out.append(0xFC | UInt8(parallelismType & 3))
        out.append(0xFC | UInt8(chromaFormat & 3))
        out.append(0xF8 | UInt8((bitDepthLuma - 8) & 7))
        out.append(0xF8 | UInt8((bitDepthChroma - 8) & 7))
        out.appendBigEndian(UInt16(0))  // avgFrameRate: unspecified
        out.append(UInt8(temporalLayers & 7) << 3 | (temporalIDNested ? 4 : 0) | UInt8((lengthSize - 1) & 3))
        var types: [UInt8] = []
        for unit in nalUnits where !types.contains(HEVCNALHeader.type(of: unit[0])) {
            types.append(HEVCNALHeader.type(of: unit[0]))
        }
        out.append(UInt8(types.count))
        for type in types {
            let units = nalUnits.filter { HEVCNALHeader.type(of: $0[0]) == type }
            guard units.count <= 0xFFFF else { throw FormatError("hvcC", "\(units.count) NAL units of type \(type)") }
            out.append(0x80 | type)  // array_completeness
            out.appendBigEndian(UInt16(units.count))
            for unit in units {
                guard unit.count <= 0xFFFF else { throw FormatError("hvcC", "a NAL unit of \(unit.count) bytes") }
                out.appendBigEndian(UInt16(unit.count))
                out.append(contentsOf: unit)
            }
        }
        return out
    }

    /// The RFC 6381 CODECS value (ISO/IEC 14496-15 Annex E) for sample entry `hvc1`, such as
    /// `hvc1.1.6.L93.B0`: profile space and profile, the compatibility flags bit-reversed in hex, tier
    /// and level, then the constraint bytes in hex with trailing zero bytes left out.
    public var codecString: String { profileTierLevel.codecString }
}

extension HEVCProfileTierLevel {
    /// The RFC 6381 CODECS value for sample entry `hvc1` (ISO/IEC 14496-15 Annex E), as
    /// `HEVCDecoderConfiguration.codecString` gives it.
    public var codecString: String {
        let space = ["", "A", "B", "C"][Int(profileSpace & 3)]
        var reversed: UInt32 = 0
        for bit in 0..<32 where compatibilityFlags & (1 << bit) != 0 { reversed |= 1 << (31 - bit) }
        var parts = [
            "hvc1", space + String(profileIDC), String(reversed, radix: 16, uppercase: true),
            (highTier ? "H" : "L") + String(levelIDC),
        ]
        var constraints = constraintFlags
        while constraints.last == 0 { constraints.removeLast() }
        parts += constraints.map { String($0, radix: 16, uppercase: true) }
        return parts.joined(separator: ".")
    }
}
