import Crypto
public import FoundationEssentials

/// What a valid session token says: which session, which asset, until when.
public struct SessionClaims: Sendable, Equatable {
    /// The playback session.
    public let sessionID: String
    /// The asset the session may play.
    public let assetID: String
    /// When the token stops working (whole seconds since 1970).
    public let expiresAt: Date
}

/// Issues and checks playback session tokens: `v1.{session}.{asset}.{expiry}.{mac}`, where `mac` is
/// the base64url HMAC-SHA256 of everything before it under a key derived from the KEK. Signatures
/// are compared in constant time.
public struct SessionTokenSigner: Sendable {
    private let key: [UInt8]

    /// A signer with the 32-byte `key`.
    public init(key: [UInt8]) {
        self.key = key
    }

    /// A token for `session` playing `asset` until `expiresAt`.
    public func issue(session: String, asset: String, expiresAt: Date) -> String {
        let payload = "v1.\(session).\(asset).\(Int64(expiresAt.timeIntervalSince1970))"
        return payload + "." + Base64URL.encode(Digest.hmacSHA256(key: key, data: Array(payload.utf8)))
    }

    /// The claims of `token` when it is well formed, correctly signed and unexpired at `now`.
    public func verify(_ token: String?, now: Date) -> Result<SessionClaims, AccessRefusal> {
        guard let token, !token.isEmpty else { return .failure(.tokenMissing) }
        guard token.utf8.count <= 256 else { return .failure(.tokenMalformed) }
        // Bytes, not Characters: this runs on every key request and the token is ASCII when valid.
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map {
            Substring($0)
        }
        guard parts.count == 5, parts[0] == "v1", Identifier.isValid(parts[1]), Identifier.isValid(parts[2]),
            parts[3].utf8.count <= 12, parts[3].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let expiry = Int64(parts[3]),
            parts[4].utf8.count == 43
        else { return .failure(.tokenMalformed) }
        let payload = token.utf8.prefix(token.utf8.count - 44)
        let expected = Array(Base64URL.encode(Digest.hmacSHA256(key: key, data: Array(payload))).utf8)
        guard Digest.constantTimeEquals(expected, Array(parts[4].utf8)) else { return .failure(.tokenTampered) }
        let expiresAt = Date(timeIntervalSince1970: Double(expiry))
        guard expiresAt > now else { return .failure(.tokenExpired) }
        return .success(SessionClaims(sessionID: String(parts[1]), assetID: String(parts[2]), expiresAt: expiresAt))
    }
}
