/// Why a playlist or key request was refused. Each case has its own status and sentence, so the
/// client learns exactly which check failed.
public enum AccessRefusal: String, Error, Sendable, Equatable, CaseIterable {
    /// No session token was sent.
    case tokenMissing = "token-missing"
    /// The token is not in the session-token format.
    case tokenMalformed = "token-malformed"
    /// The token's signature does not match its contents.
    case tokenTampered = "token-tampered"
    /// The token's expiry has passed.
    case tokenExpired = "token-expired"
    /// The token is for another asset.
    case wrongAsset = "token-wrong-asset"
    /// The token's session was revoked.
    case sessionRevoked = "session-revoked"
    /// The token's session is not known (it expired and was forgotten, or never existed here).
    case sessionUnknown = "session-unknown"
    /// The asset denies keys while capturing, and the session reports a capture.
    case captureActive = "capture-active"
    /// The asset denies keys while capturing, and the session's capture state is unknown.
    case captureUnknown = "capture-unknown"
    /// No such key.
    case keyUnknown = "key-unknown"
    /// This client address was refused too often; it should wait `Retry-After` seconds.
    case rateLimited = "rate-limited"

    /// The HTTP status: 401 when the token itself fails, 403 when a valid token is not enough.
    public var status: Int {
        switch self {
        case .tokenMissing, .tokenMalformed, .tokenTampered, .tokenExpired: 401
        case .wrongAsset, .sessionRevoked, .sessionUnknown, .captureActive, .captureUnknown: 403
        case .keyUnknown: 404
        case .rateLimited: 429
        }
    }

    /// True when the request carried a valid token (the refusal is about its session, asset or key),
    /// so it is audited one record each; refusals without one are only counted.
    public var carriesValidToken: Bool {
        switch self {
        case .tokenMissing, .tokenMalformed, .tokenTampered, .tokenExpired, .rateLimited: false
        case .wrongAsset, .sessionRevoked, .sessionUnknown, .captureActive, .captureUnknown, .keyUnknown: true
        }
    }

    /// A short title.
    public var title: String {
        switch self {
        case .tokenMissing: "Session token missing"
        case .tokenMalformed: "Session token malformed"
        case .tokenTampered: "Session token tampered with"
        case .tokenExpired: "Session token expired"
        case .wrongAsset: "Session token is for another asset"
        case .sessionRevoked: "Session revoked"
        case .sessionUnknown: "Session unknown"
        case .captureActive: "Screen capture active"
        case .captureUnknown: "Capture state unknown"
        case .keyUnknown: "Key not found"
        case .rateLimited: "Too many refused requests"
        }
    }

    /// One sentence for the client.
    public var detail: String {
        switch self {
        case .tokenMissing: "The request carries no session token; pass ?token= from the playback URL."
        case .tokenMalformed: "The session token is not in the v1 token format."
        case .tokenTampered: "The session token's signature does not match its contents."
        case .tokenExpired: "The session token has expired; create a new session."
        case .wrongAsset: "The session token was issued for a different asset."
        case .sessionRevoked: "The session this token belongs to has been revoked."
        case .sessionUnknown: "The session this token belongs to is not known to this gateway."
        case .captureActive: "This asset's keys are withheld while the session reports a screen capture."
        case .captureUnknown: "This asset's keys are withheld until the session reports its capture state."
        case .keyUnknown: "No key with this ID exists."
        case .rateLimited: "This address was refused too often; wait as long as Retry-After says."
        }
    }
}
