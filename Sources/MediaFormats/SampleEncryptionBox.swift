/// A `senc` box (ISO/IEC 23001-7 §7.2): each sample's IV and subsample map, read against the sizes of
/// the samples it describes (from `trun`): the record count must be the sample count, each map must
/// cover its sample exactly, and the records must fill the box.
public struct SampleEncryptionBox: Equatable, Sendable {
    /// One sample's record.
    public struct Record: Equatable, Sendable {
        /// The per-sample IV: empty for a constant IV.
        public var iv: [UInt8]
        /// The clear and protected runs, or none when the whole sample is protected.
        public var subsamples: [Subsample]
    }

    /// The box flags: 2 means each record has a subsample map.
    public var flags: UInt32
    /// One record per sample, in order.
    public var records: [Record]
    /// Each record's size in bytes, as `saiz` must give them.
    public var recordSizes: [Int]
    /// Where the first record starts in the bytes, for `saio`.
    public var firstRecord: Int

    /// Reads the body of `box` in `bytes`, with IVs of `ivSize` bytes, for samples of `sampleSizes`.
    /// `structure` names the traf in errors (the box is named after it, `… senc`).
    public init(_ bytes: [UInt8], box: Box, structure: String, ivSize: Int, sampleSizes: [Int]) throws(FormatError) {
        let count = sampleSizes.count
        var reader = BoxReader(bytes, box: box, structure: structure)
        flags = try reader.versionAndFlags().flags
        guard Int(try reader.u32()) == count else {
            throw FormatError(reader.structure, "sample count is not trun's \(count)")
        }
        firstRecord = reader.position
        records = []
        recordSizes = []
        for index in 0..<count {
            let start = reader.position
            var record = Record(iv: try reader.data(ivSize), subsamples: [])
            if flags & 2 != 0 {
                let entries = Int(try reader.u16())
                for _ in 0..<entries {
                    record.subsamples.append(Subsample(clear: Int(try reader.u16()), protected: Int(try reader.u32())))
                }
                let covered = record.subsamples.reduce(0) { $0 + $1.clear + $1.protected }
                guard covered == sampleSizes[index] else {
                    throw FormatError(
                        reader.structure,
                        "sample \(index)'s subsamples cover \(covered) bytes of \(sampleSizes[index])")
                }
            }
            records.append(record)
            recordSizes.append(reader.position - start)
        }
        guard reader.remaining == 0 else {
            throw FormatError(reader.structure, "\(reader.remaining) bytes after the last record")
        }
    }
}
