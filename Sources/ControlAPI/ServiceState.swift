import Synchronization

/// Whether the service is taking traffic or draining before it stops; `/readyz` reports it.
public final class ServiceState: Sendable {
    private let draining = Mutex(false)

    /// A service that is ready.
    public init() {}

    /// Marks the service draining: `/readyz` answers 503 from now on.
    public func beginDraining() { draining.withLock { $0 = true } }

    /// True once draining has begun.
    public var isDraining: Bool { draining.withLock { $0 } }
}
