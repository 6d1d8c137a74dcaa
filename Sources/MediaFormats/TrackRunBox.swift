/// A `trun` box (ISO/IEC 14496-12 §8.8.8): a fragment's samples, each with its duration and size (or
/// the `tfhd` defaults). GuardPlay's fragments carry a data offset, so a run without one is refused; the
/// sample count is bounded by the bytes the box holds, so a hostile count cannot make a large table.
public struct TrackRunBox: Equatable, Sendable {
    /// The box flags: which per-sample fields are present.
    public var flags: UInt32
    /// The data offset, from the start of the `moof`.
    public var dataOffset: Int
    /// Each sample's duration, in the track's timescale.
    public var durations: [UInt32]
    /// Each sample's size in bytes.
    public var sizes: [Int]

    /// The samples' durations added up.
    public var totalDuration: UInt64 { durations.reduce(0) { $0 + UInt64($1) } }

    /// Reads the body of `box` in `bytes`; a sample without its own duration or size takes
    /// `defaultDuration` or `defaultSize` (from `tfhd`). `structure` names the traf in errors (the box is
    /// named after it, `… trun`).
    public init(
        _ bytes: [UInt8], box: Box, structure: String, defaultDuration: UInt32, defaultSize: UInt32
    ) throws(FormatError) {
        var reader = BoxReader(bytes, box: box, structure: structure)
        flags = try reader.versionAndFlags().flags
        let count = Int(try reader.u32())
        guard flags & 0x01 != 0 else { throw FormatError(reader.structure, "has no data offset") }
        dataOffset = Int(Int32(bitPattern: try reader.u32()))
        if flags & 0x04 != 0 { _ = try reader.u32() }
        guard count <= reader.remaining / 4 + 1 else {
            throw FormatError(reader.structure, "\(count) samples in \(reader.remaining) bytes")
        }
        durations = []
        durations.reserveCapacity(count)
        sizes = []
        sizes.reserveCapacity(count)
        for _ in 0..<count {
            durations.append(flags & 0x100 != 0 ? try reader.u32() : defaultDuration)
            sizes.append(Int(flags & 0x200 != 0 ? try reader.u32() : defaultSize))
            if flags & 0x400 != 0 { _ = try reader.u32() }
            if flags & 0x800 != 0 { _ = try reader.u32() }
        }
    }
}
