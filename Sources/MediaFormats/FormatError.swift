/// A malformed or unsupported byte structure: which structure it was and what is wrong with it.
///
/// The pure parsers (NAL units, avcC, ADTS, AC-3, TS, ID3, playlists) throw this; the packager and the
/// verifier wrap it with the file it came from.
public struct FormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The structure being read, such as `avcC`, `ADTS header` or `video.m3u8 line 7`.
    public let structure: String
    /// What is wrong, in words a user can act on.
    public let reason: String
    /// Whether the bytes are broken or well-formed but use something GuardPlay does not carry.
    public let kind: Kind

    /// Broken bytes, or a well-formed feature GuardPlay refuses.
    public enum Kind: Sendable, Equatable {
        /// The bytes do not follow their format (a caller's exit 14).
        case malformed
        /// The bytes are valid but use a feature GuardPlay refuses rather than package wrongly, such as
        /// interlaced or multi-layer HEVC (a caller's exit 16).
        case unsupported
    }

    /// Creates an error about `structure`.
    public init(_ structure: String, _ reason: String, kind: Kind = .malformed) {
        self.structure = structure
        self.reason = reason
        self.kind = kind
    }

    /// The structure and the reason, as one line.
    public var description: String { "\(structure): \(reason)" }
}
