/// Writes ISO base media file format boxes (ISO/IEC 14496-12 §4.2) into bytes: `begin` writes a size
/// placeholder and the type, `end` patches the size of the innermost open box, so nested boxes need no
/// size computed in advance. Every field is big-endian.
public struct BoxWriter {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []
    private var open: [Int] = []

    /// A writer with room for `capacity` bytes, and for boxes nested eight deep (a video sample entry's
    /// `sinf/schi/tenc` is seven below `moov`).
    public init(capacity: Int = 1_024) {
        bytes.reserveCapacity(capacity)
        open.reserveCapacity(8)
    }

    /// Bytes written so far.
    public var count: Int { bytes.count }

    /// Opens a box of `type` (a four-character code).
    public mutating func begin(_ type: String) {
        open.append(bytes.count)
        bytes.appendBigEndian(UInt32(0))
        bytes.appendFourCC(type)
    }

    /// Opens a full box of `type` with its version and 24-bit flags.
    public mutating func begin(_ type: String, version: UInt8, flags: UInt32) {
        begin(type)
        bytes.appendBigEndian(UInt32(version) << 24 | (flags & 0xFF_FFFF))
    }

    /// Closes the innermost open box, patching its size.
    public mutating func end() {
        let start = open.removeLast()
        patch(UInt32(bytes.count - start), at: start)
    }

    /// A box of `type` whose body `content` writes.
    public mutating func box(_ type: String, _ content: (inout BoxWriter) -> Void) {
        begin(type)
        content(&self)
        end()
    }

    /// A full box of `type` whose body `content` writes.
    public mutating func box(_ type: String, version: UInt8, flags: UInt32, _ content: (inout BoxWriter) -> Void) {
        begin(type, version: version, flags: flags)
        content(&self)
        end()
    }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }
    public mutating func u16(_ value: UInt16) { bytes.appendBigEndian(value) }
    public mutating func u32(_ value: UInt32) { bytes.appendBigEndian(value) }
    public mutating func u64(_ value: UInt64) {
        bytes.appendBigEndian(UInt32(value >> 32))
        bytes.appendBigEndian(UInt32(value & 0xFFFF_FFFF))
    }
    public mutating func fourCC(_ code: String) { bytes.appendFourCC(code) }
    public mutating func append(_ data: [UInt8]) { bytes.append(contentsOf: data) }
    public mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    /// Overwrites the four bytes at `offset` with `value`, for fields known only later (`trun`'s data
    /// offset, `saio`'s offset).
    mutating func patch(_ value: UInt32, at offset: Int) {
        bytes[offset] = UInt8(value >> 24)
        bytes[offset + 1] = UInt8((value >> 16) & 0xFF)
        bytes[offset + 2] = UInt8((value >> 8) & 0xFF)
        bytes[offset + 3] = UInt8(value & 0xFF)
    }
}
