import Store

/// A control request the gateway could not carry out, with enough detail for a problem body.
public struct GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure.
    public enum Kind: String, Sendable {
        /// The thing named does not exist.
        case notFound = "not-found"
        /// A field is missing or has a bad value.
        case invalid = "invalid-request"
        /// The configuration does not allow this (importing when no import root is set).
        case forbidden = "forbidden"
        /// The request conflicts with the current state (a reused idempotency key, a final job).
        case conflict = "conflict"
        /// The gateway cannot do this now (no packager in this build, draining).
        case unavailable = "unavailable"
        /// The store failed.
        case storage = "storage-error"
    }

    /// What kind.
    public let kind: Kind
    /// A stable code for the specific problem, such as `asset-not-found`.
    public let code: String
    /// One sentence for the client.
    public let detail: String

    /// A failure of `kind`.
    public init(_ kind: Kind, code: String, detail: String) {
        self.kind = kind
        self.code = code
        self.detail = detail
    }

    /// The status code for the failure.
    public var status: Int {
        switch kind {
        case .notFound: 404
        case .forbidden: 403
        case .invalid: 422
        case .conflict: 409
        case .unavailable: 503
        case .storage: 500
        }
    }

    public var description: String { "\(code): \(detail)" }

    /// The answer to a failed store call: a full disk (SQLite's `SQLITE_FULL`, primary code 13) or an
    /// unreachable PostgreSQL is the gateway being unable to take the request for now (503), anything
    /// else a storage error (500).
    static func storage(_ error: StoreError) -> GatewayError {
        if error.isUnavailable {
            return GatewayError(
                .unavailable, code: "storage-unavailable",
                detail: "The gateway cannot reach its database; nothing was changed. Try again shortly.")
        }
        if error.code & 0xFF == 13 {
            return GatewayError(
                .unavailable, code: "storage-full",
                detail: "The gateway's store is full; nothing was changed. Try again once space is freed.")
        }
        return GatewayError(.storage, code: "storage-error", detail: "The gateway's store failed: \(error.operation).")
    }
}

/// Runs a store call, turning its error into a `GatewayError` (and logging the full text).
func stored<T>(_ log: @Sendable (String) -> Void, _ body: () throws(StoreError) -> T) throws(GatewayError) -> T {
    do { return try body() } catch {
        log("store: \(error)")
        throw GatewayError.storage(error)
    }
}
