/// Packed audio segments (HLS §3.4): an ID3v2.4 tag with Apple's PRIV frames, then raw ADTS or AC-3
/// frames. The tag carries the first frame's 33-bit MPEG-2 timestamp and, under SAMPLE-AES, the audio
/// setup information.
public enum PackedAudio: Sendable {
    /// Owner of the PRIV frame holding the 8-byte big-endian timestamp of the first frame.
    public static let timestampOwner = "com.apple.streaming.transportStreamTimestamp"
    /// Owner of the PRIV frame holding the SAMPLE-AES audio setup information.
    public static let audioDescriptionOwner = "com.apple.streaming.audioDescription"

    /// The ID3 tag that starts a segment whose first frame has presentation time `timestamp` (90 kHz);
    /// `setup` is the serialized audio setup information, under SAMPLE-AES.
    public static func id3Tag(timestamp: Int64, setup: [UInt8]?) throws(FormatError) -> [UInt8] {
        var body: [UInt8] = []
        var stamp: [UInt8] = []
        let wrapped = UInt64(
            ((timestamp % TransportStreamWriter.timestampWrap) + TransportStreamWriter.timestampWrap)
                % TransportStreamWriter.timestampWrap)
        stamp.appendBigEndian(UInt32(wrapped >> 32))
        stamp.appendBigEndian(UInt32(wrapped & 0xFFFF_FFFF))
        try appendPrivateFrame(owner: timestampOwner, data: stamp, to: &body)
        if let setup { try appendPrivateFrame(owner: audioDescriptionOwner, data: setup, to: &body) }
        var tag: [UInt8] = Array("ID3".utf8) + [4, 0, 0]
        tag.append(contentsOf: try syncsafe(body.count))
        return tag + body
    }

    private static func appendPrivateFrame(owner: String, data: [UInt8], to body: inout [UInt8]) throws(FormatError) {
        let content = Array(owner.utf8) + [0] + data
        body.append(contentsOf: Array("PRIV".utf8))
        body.append(contentsOf: try syncsafe(content.count))
        body.append(contentsOf: [0, 0])
        body.append(contentsOf: content)
    }

    /// A 28-bit size as four 7-bit bytes; throws when it does not fit 28 bits.
    private static func syncsafe(_ value: Int) throws(FormatError) -> [UInt8] {
        guard value >= 0 && value < 1 << 28 else {
            throw FormatError("ID3 tag", "a size of \(value) bytes does not fit a syncsafe integer")
        }
        return [
            UInt8((value >> 21) & 0x7F), UInt8((value >> 14) & 0x7F), UInt8((value >> 7) & 0x7F), UInt8(value & 0x7F),
        ]
    }

    /// A parsed ID3 tag at the start of a packed audio segment.
    public struct Tag: Sendable {
        /// Bytes the tag occupies, header included.
        public var length: Int
        /// The PRIV frames, by owner.
        public var privateFrames: [String: [UInt8]]
    }

    /// Parses the ID3v2 tag at the start of `bytes`.
    public static func parseTag(_ bytes: [UInt8]) throws(FormatError) -> Tag {
        let structure = "ID3 tag"
        guard bytes.count >= 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33 else {
            throw FormatError(structure, "a packed audio segment must start with an ID3 tag")
        }
        guard bytes[3] == 4 else { throw FormatError(structure, "version 2.\(bytes[3]), 2.4 expected") }
        func readSyncsafe(_ offset: Int) throws(FormatError) -> Int {
            let raw = bytes[offset..<(offset + 4)]
            guard raw.allSatisfy({ $0 < 0x80 }) else { throw FormatError(structure, "size is not syncsafe") }
            return raw.reduce(0) { $0 << 7 | Int($1) }
        }
        let size = try readSyncsafe(6)
        let length = 10 + size + (bytes[5] & 0x10 != 0 ? 10 : 0)
        guard length <= bytes.count else { throw FormatError(structure, "\(size) bytes declared, segment too short") }
        var frames: [String: [UInt8]] = [:]
        var offset = 10
        while offset + 10 <= 10 + size {
            let id = String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
            if bytes[offset] == 0 { break }  // padding
            let frameSize = try readSyncsafe(offset + 4)
            let start = offset + 10
            guard start + frameSize <= 10 + size else { throw FormatError(structure, "frame \(id) overruns the tag") }
            if id == "PRIV" {
                let content = bytes[start..<(start + frameSize)]
                guard let zero = content.firstIndex(of: 0) else {
                    throw FormatError(structure, "PRIV frame without an owner terminator")
                }
                frames[String(decoding: content[..<zero], as: UTF8.self)] = Array(content[(zero + 1)...])
            }
            offset = start + frameSize
        }
        return Tag(length: length, privateFrames: frames)
    }
}
