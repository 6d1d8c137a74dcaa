public import FoundationEssentials

/// How far a capture report's `observedAt` may be from the receiver's clock. A report from a client
/// whose clock is far off, or one replayed long after it was made, says nothing about now, so it is
/// refused rather than applied: at most `clockTolerance` ahead, and at most `clockTolerance` plus one
/// lease behind (a report older than that would have lapsed already).
public struct ObservedAtWindow: Sendable, Equatable {
    /// The clock difference tolerated either way: 5 minutes.
    public static let clockTolerance: TimeInterval = 300

    /// The lease the reports hold for.
    public let lease: TimeInterval

    /// The window for reports that hold for `lease` seconds.
    public init(lease: TimeInterval) {
        self.lease = lease
    }

    /// Throws a 422 `implausible-observed-at` when `observedAt` is outside the window around `now`.
    public func check(_ observedAt: Date, now: Date) throws(GatewayError) {
        let ahead = observedAt.timeIntervalSince(now)
        if ahead > Self.clockTolerance {
            throw GatewayError(
                .invalid, code: "implausible-observed-at",
                detail: "observedAt is \(Int(ahead.rounded())) s ahead of this server's clock; at most "
                    + "\(Int(Self.clockTolerance)) s is accepted. Check the client's clock.")
        }
        let behind = -ahead
        let limit = Self.clockTolerance + lease
        if behind > limit {
            throw GatewayError(
                .invalid, code: "implausible-observed-at",
                detail: "observedAt is \(Int(behind.rounded())) s behind this server's clock; at most "
                    + "\(Int(limit.rounded())) s is accepted. Check the client's clock.")
        }
    }
}
