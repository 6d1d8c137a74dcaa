/// A `tenc` box (ISO/IEC 23001-7 §8.2): the default protection of a track's samples, read field by
/// field. What a scheme requires of the fields (a constant IV for `cbcs`, 8-byte IVs for `cenc`) is the
/// caller's to check; this reads what is there and refuses a field that runs past the box.
public struct TrackEncryptionBox: Equatable, Sendable {
    /// The full box version: 1 carries the pattern.
    public var version: UInt8
    /// `default_crypt_byte_block`: encrypted 16-byte blocks in each pattern run.
    public var cryptBlocks: Int
    /// `default_skip_byte_block`: clear 16-byte blocks in each pattern run.
    public var skipBlocks: Int
    /// `default_isProtected`, 1 for encrypted samples.
    public var isProtected: UInt8
    /// `default_Per_Sample_IV_Size`: 0 (a constant IV), 8 or 16.
    public var perSampleIVSize: Int
    /// `default_KID`, 16 bytes.
    public var keyID: [UInt8]
    /// `default_constant_IV`, when the per-sample IV size is 0; empty otherwise.
    public var constantIV: [UInt8]

    /// Reads the body of `box` in `bytes`; `structure` names what holds it in errors (the box is named
    /// after it, such as `init.mp4 tenc`).
    public init(_ bytes: [UInt8], box: Box, structure: String) throws(FormatError) {
        var reader = BoxReader(bytes, box: box, structure: structure)
        version = try reader.versionAndFlags().version
        _ = try reader.u8()
        let pattern = try reader.u8()
        isProtected = try reader.u8()
        perSampleIVSize = Int(try reader.u8())
        keyID = try reader.data(16)
        constantIV = []
        if perSampleIVSize == 0 {
            let size = Int(try reader.u8())
            constantIV = try reader.data(size)
        }
        cryptBlocks = Int(pattern >> 4)
        skipBlocks = Int(pattern & 0x0F)
    }
}
