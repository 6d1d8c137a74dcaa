public import FoundationEssentials

/// Where the gateway reads the time, so tests can move it by hand.
public protocol GatewayClock: Sendable {
    /// The current wall-clock time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemClock: GatewayClock {
    /// The system clock.
    public init() {}

    public func now() -> Date { Date() }
}
