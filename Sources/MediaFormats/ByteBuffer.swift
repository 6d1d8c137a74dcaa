/// A growable byte buffer written through raw pointers, for building TS packets without per-byte
/// bounds checks. It is reused: `removeAll()` keeps the storage.
public final class ByteBuffer {
    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    /// Bytes held.
    public private(set) var count = 0

    /// An empty buffer with room for `capacity` bytes before it grows.
    public init(capacity: Int = 1 << 16) {
        self.capacity = max(capacity, 16)
        storage = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    /// Grows the buffer by `byteCount` bytes and returns where they start; the caller fills them
    /// before the next call.
    public func extend(by byteCount: Int) -> UnsafeMutableRawPointer {
        if count + byteCount > capacity {
            var newCapacity = capacity * 2
            while newCapacity < count + byteCount { newCapacity *= 2 }
            let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
            grown.copyMemory(from: storage, byteCount: count)
            storage.deallocate()
            storage = grown
            capacity = newCapacity
        }
        let start = storage + count
        count += byteCount
        return start
    }

    /// Appends `bytes`.
    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        extend(by: bytes.count).copyMemory(from: source, byteCount: bytes.count)
    }

    /// Appends `bytes`.
    public func append(_ bytes: [UInt8]) { bytes.withUnsafeBytes { append($0) } }

    /// Appends `nal` after its length as four big-endian bytes, as ISO BMFF samples store NAL units.
    public func appendLengthPrefixed(_ nal: UnsafeRawBufferPointer) {
        let start = extend(by: 4 + nal.count)
        start.storeBytes(of: UInt32(nal.count).bigEndian, as: UInt32.self)
        if let source = nal.baseAddress, nal.count > 0 { (start + 4).copyMemory(from: source, byteCount: nal.count) }
    }

    /// Drops the contents and keeps the storage.
    public func removeAll() { count = 0 }

    /// Keeps only the first `byteCount` bytes.
    public func truncate(to byteCount: Int) {
        precondition(byteCount <= count, "cannot truncate a buffer to more bytes than it holds")
        count = byteCount
    }

    /// Calls `body` with the contents, which must not escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: storage, count: count))
    }

    /// Calls `body` with the contents, mutable, which must not escape.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: storage, count: count))
    }

    /// `withUnsafeMutableBytes` for a closure with a typed error, which `rethrows` does not carry.
    public func withMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeMutableRawBufferPointer(start: storage, count: count))
    }

    /// A copy of the contents.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}

@available(*, unavailable, message: "a ByteBuffer has one owner")
extension ByteBuffer: Sendable {}
