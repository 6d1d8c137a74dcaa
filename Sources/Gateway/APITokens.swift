import Crypto
public import FoundationEssentials
public import Store
import SystemSupport

/// What an API token may do.
public enum Scope: String, Sendable, CaseIterable, Comparable {
    /// Sessions, capture state, commands, asset policy, player control.
    case control
    /// Packaging jobs.
    case package
    /// Everything, including importing assets.
    case admin

    public static func < (lhs: Scope, rhs: Scope) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Why a bearer token was not accepted.
public enum APITokenRefusal: String, Error, Sendable, Equatable {
    /// No `Authorization: Bearer` token.
    case missing = "api-token-missing"
    /// Not a GuardPlay API token, or no such token, or a wrong secret.
    case invalid = "api-token-invalid"
    /// The token was revoked.
    case revoked = "api-token-revoked"
    /// The token lacks the scope the route needs.
    case insufficientScope = "insufficient-scope"
    /// The store holding the tokens cannot be reached (503: the token may well be good).
    case storeUnavailable = "storage-unavailable"
}

/// API tokens: `gp_{id}_{secret}`, where `id` (16 hex digits) finds the stored record and `secret`
/// (64 hex digits) is checked against its SHA-256 in constant time. The secret is shown once, at
/// creation, and never stored.
public enum APITokens {
    /// Creates and stores a token with `scopes`; returns the token text (shown once) and its record.
    public static func create(
        in store: any Store, scopes: Set<Scope>, name: String, now: Date = Date()
    ) throws(StoreError) -> (token: String, record: APITokenRecord) {
        let id = Identifier.randomHex(8)
        let secret = Identifier.randomHex(32)
        let record = APITokenRecord(
            id: id, secretHash: Digest.sha256(Array(secret.utf8)), scopes: scopes.map(\.rawValue).sorted(), name: name,
            createdAt: now)
        try store.insertToken(record)
        return ("gp_\(id)_\(secret)", record)
    }

    /// The scopes `token` grants, when it is a live token of `store`.
    public static func authenticate(_ token: String?, in store: any Store) throws(StoreError) -> Result<
        Set<Scope>, APITokenRefusal
    > {
        guard let token, !token.isEmpty else { return .failure(.missing) }
        let parts = token.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "gp", parts[1].utf8.count == 16, parts[2].utf8.count == 64,
            parts[1].utf8.allSatisfy(isHexDigit), parts[2].utf8.allSatisfy(isHexDigit)
        else { return .failure(.invalid) }
        guard let record = try store.token(String(parts[1])) else { return .failure(.invalid) }
        guard Digest.constantTimeEquals(Digest.sha256(Array(parts[2].utf8)), record.secretHash) else {
            return .failure(.invalid)
        }
        guard record.revokedAt == nil else { return .failure(.revoked) }
        return .success(Set(record.scopes.compactMap(Scope.init(rawValue:))))
    }

    /// True when `granted` allows `needed`: admin allows everything.
    public static func allows(_ granted: Set<Scope>, _ needed: Scope) -> Bool {
        granted.contains(.admin) || granted.contains(needed)
    }

    /// Parses a comma-separated scope list such as `control,package`; nil on an unknown scope.
    public static func parseScopes(_ text: String) -> Set<Scope>? {
        let names = text.split(separator: ",").map { $0.trimmingSpaces() }
        guard !names.isEmpty else { return nil }
        var scopes = Set<Scope>()
        for name in names {
            guard let scope = Scope(rawValue: name) else { return nil }
            scopes.insert(scope)
        }
        return scopes
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 102)
    }
}
