/// A `saiz` box (ISO/IEC 14496-12 §8.7.8): the size of each sample's auxiliary information (its `senc`
/// record), one default for all or one byte each.
public struct SampleAuxiliaryInformationSizes: Equatable, Sendable {
    /// Each sample's record size in bytes.
    public var sizes: [Int]

    /// Reads the body of `box` in `bytes` for `sampleCount` samples (from `trun`); `structure` names the
    /// traf in errors.
    public init(_ bytes: [UInt8], box: Box, structure: String, sampleCount count: Int) throws(FormatError) {
        var reader = BoxReader(bytes, box: box, structure: structure)
        if try reader.versionAndFlags().flags & 1 != 0 { try reader.skip(8) }
        let defaultSize = Int(try reader.u8())
        guard Int(try reader.u32()) == count else {
            throw FormatError(reader.structure, "sample count is not trun's \(count)")
        }
        sizes = defaultSize != 0 ? Array(repeating: defaultSize, count: count) : try reader.data(count).map(Int.init)
    }
}

/// A `saio` box (ISO/IEC 14496-12 §8.7.9): where the samples' auxiliary information starts, from the
/// `moof`, one offset per chunk (a fragment is one chunk).
public struct SampleAuxiliaryInformationOffsets: Equatable, Sendable {
    /// The offsets, in order.
    public var offsets: [Int]

    /// Reads the body of `box` in `bytes`; `structure` names the traf in errors. The entry count is
    /// bounded by the bytes the box holds.
    public init(_ bytes: [UInt8], box: Box, structure: String) throws(FormatError) {
        var reader = BoxReader(bytes, box: box, structure: structure)
        let header = try reader.versionAndFlags()
        if header.flags & 1 != 0 { try reader.skip(8) }
        let count = Int(try reader.u32())
        let width = header.version == 1 ? 8 : 4
        guard count <= reader.remaining / width else {
            throw FormatError(reader.structure, "\(count) offsets in \(reader.remaining) bytes")
        }
        offsets = []
        for _ in 0..<count {
            offsets.append(header.version == 1 ? Int(clamping: try reader.u64()) : Int(try reader.u32()))
        }
    }
}
