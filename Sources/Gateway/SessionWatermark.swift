import Crypto

/// One of a watermarked segment's two variants.
public enum WatermarkVariant: String, Sendable, CaseIterable {
    /// `<name>.a.<ext>`: codeword bit 0.
    case a
    /// `<name>.b.<ext>`: codeword bit 1.
    case b

    /// The variant that carries `bit`.
    public init(bit: Bool) { self = bit ? .b : .a }

    /// The other variant.
    public var other: WatermarkVariant { self == .a ? .b : .a }
}

/// Which variant of each segment a session gets, from the watermarking key alone (it never leaves
/// the server):
/// - the session's **codeword** is `WatermarkCode.encode` of the first 36 bits of
///   HMAC-SHA256(key, "guardplay/watermark/codeword/v1" ‖ 0 ‖ session ID);
/// - segment i of an asset carries codeword bit π_r(i mod 64), where round r = i / 64 and π_r is a
///   permutation of 0..<64 keyed by the key, the asset ID and r (a Fisher–Yates shuffle drawn from
///   HMAC-SHA256 in counter mode), so the bits repeat in a new order every 64 segments;
/// - the variant's URL carries an opaque tag, base64url of the first 16 bytes of
///   HMAC-SHA256(key, "guardplay/watermark/segment/v1" ‖ session ‖ rendition ‖ segment ‖ variant), which
///   names neither the bit nor anything another session could use.
public struct SessionWatermark: Sendable {
    let key: [UInt8]

    /// Bytes of the opaque tag before base64url.
    public static let tagBytes = 16

    /// A watermark under `key` (32 bytes).
    public init(key: [UInt8]) { self.key = key }

    /// The session's 64-bit codeword (bit i is codeword bit i).
    public func codeword(session: String) -> UInt64 {
        let mac = Digest.hmacSHA256(key: key, data: Self.fields("guardplay/watermark/codeword/v1", [session]))
        let message = mac.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> UInt64(64 - WatermarkCode.messageBits)
        return WatermarkCode.encode(message)
    }

    /// The codeword bit position segment `index` of `asset` carries.
    public func position(asset: String, segment index: Int) -> Int {
        permutation(asset: asset, round: index / WatermarkCode.length)[index % WatermarkCode.length]
    }

    /// The keyed permutation of round `round` of `asset`: entry j is the codeword bit of the round's
    /// segment j.
    public func permutation(asset: String, round: Int) -> [Int] {
        var order = Array(0..<WatermarkCode.length)
        var stream: [UInt8] = []
        var block = 0
        func next() -> UInt64 {
            if stream.count < 8 {
                stream += Digest.hmacSHA256(
                    key: key, data: Self.fields("guardplay/watermark/permutation/v1", [asset, "\(round)", "\(block)"]))
                block += 1
            }
            let value = stream.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            stream.removeFirst(8)
            return value
        }
        // Fisher–Yates; the modulo bias of a 64-bit draw over at most 64 choices is below 2⁻⁵⁸.
        for last in stride(from: order.count - 1, to: 0, by: -1) {
            order.swapAt(last, Int(next() % UInt64(last + 1)))
        }
        return order
    }

    /// The variant session `session` gets of segment `index` of `asset`.
    public func variant(session: String, asset: String, segment index: Int) -> WatermarkVariant {
        variant(codeword: codeword(session: session), asset: asset, segment: index)
    }

    /// The variant a session with `codeword` gets of segment `index` of `asset`.
    public func variant(codeword: UInt64, asset: String, segment index: Int) -> WatermarkVariant {
        WatermarkVariant(bit: codeword >> UInt64(position(asset: asset, segment: index)) & 1 == 1)
    }

    /// The opaque tag of `variant` of segment `index` of the media playlist `rendition`, for `session`.
    public func tag(session: String, rendition: String, segment index: Int, variant: WatermarkVariant) -> String {
        Base64URL.encode(tagBytes(session: session, rendition: rendition, segment: index, variant: variant))
    }

    func tagBytes(session: String, rendition: String, segment index: Int, variant: WatermarkVariant) -> [UInt8] {
        Array(
            Digest.hmacSHA256(
                key: key,
                data: Self.fields("guardplay/watermark/segment/v1", [session, rendition, "\(index)", variant.rawValue])
            ).prefix(Self.tagBytes))
    }

    /// `label` and `values`, each followed by a zero byte, so no two field lists share an encoding
    /// (IDs and asset paths hold no zero byte).
    static func fields(_ label: String, _ values: [String]) -> [UInt8] {
        ([label] + values).flatMap { Array($0.utf8) + [0] }
    }
}
