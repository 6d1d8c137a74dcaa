import CFFmpeg

/// Owner of one `AVPacket` (`av_packet_alloc`, freed with `av_packet_free` in `deinit`).
///
/// A packet is reused: `InputContext.read(into:)` and `Encoder.receive(into:)` unreference it and
/// fill it again.
public final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    /// Allocates an empty packet.
    public init() {
        guard let pointer = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        self.pointer = pointer
    }

    /// Allocates a packet holding a copy of `bytes`.
    public convenience init(bytes: [UInt8]) throws(MediaError) {
        self.init()
        try check(av_new_packet(pointer, Int32(bytes.count)), "av_new_packet")
        bytes.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { pointer.pointee.data.update(from: base, count: bytes.count) }
        }
    }

    deinit { freePacket(pointer) }

    /// A second owner of this packet (`av_packet_ref`): a reference-counted payload, as the demuxer's,
    /// is shared, not copied, and stays valid after this packet is unreferenced and read into again.
    public func reference() throws(MediaError) -> Packet {
        let copy = Packet()
        try check(av_packet_ref(copy.pointer, pointer), "av_packet_ref")
        return copy
    }

    /// The index of the stream this packet belongs to.
    public var streamIndex: Int {
        get { Int(pointer.pointee.stream_index) }
        set { pointer.pointee.stream_index = Int32(newValue) }
    }
    /// Presentation timestamp in the stream's time base, or `noTimestamp`.
    public var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }
    /// Decoding timestamp in the stream's time base, or `noTimestamp`.
    public var dts: Int64 {
        get { pointer.pointee.dts }
        set { pointer.pointee.dts = newValue }
    }
    /// Duration in the stream's time base, or 0 when unknown.
    public var duration: Int64 {
        get { pointer.pointee.duration }
        set { pointer.pointee.duration = newValue }
    }
    /// The byte position in the input, or -1.
    public var position: Int64 { pointer.pointee.pos }
    /// The payload size in bytes.
    public var size: Int { Int(pointer.pointee.size) }
    /// True when the packet starts a key frame.
    public var isKeyframe: Bool {
        get { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
        set {
            if newValue { pointer.pointee.flags |= AV_PKT_FLAG_KEY } else { pointer.pointee.flags &= ~AV_PKT_FLAG_KEY }
        }
    }
    /// True when the demuxer flagged the packet as corrupt.
    public var isCorrupt: Bool { pointer.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 }
    /// True when the packet carries CENC encryption info (`AV_PKT_DATA_ENCRYPTION_INFO` side data), as
    /// the samples of an `encv`/`enca` track do (`av_packet_get_side_data`).
    public var isEncrypted: Bool { av_packet_get_side_data(pointer, AV_PKT_DATA_ENCRYPTION_INFO, nil) != nil }

    /// Calls `body` with the payload; the buffer must not escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let data = pointer.pointee.data, pointer.pointee.size > 0 else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: data, count: Int(pointer.pointee.size)))
    }

    /// A copy of the payload.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Rescales pts, dts and duration from one time base to another (`av_packet_rescale_ts`).
    public func rescaleTimestamps(from source: Rational, to target: Rational) {
        av_packet_rescale_ts(pointer, source.av, target.av)
    }

    /// Drops the payload and resets the fields (`av_packet_unref`).
    public func reset() { av_packet_unref(pointer) }
}

@available(*, unavailable, message: "a Packet is one C object with one owner")
extension Packet: Sendable {}

/// `av_packet_free` takes a pointer to the pointer; this keeps the owner's `let` intact.
func freePacket(_ pointer: UnsafeMutablePointer<AVPacket>) {
    var owned: UnsafeMutablePointer<AVPacket>? = pointer
    av_packet_free(&owned)
}
