public import CaptureMonitor
public import FoundationEssentials
import Synchronization

/// A command an operator sends to the client playing a session.
public enum SessionCommand: String, Sendable, Equatable, CaseIterable {
    /// Pause playback.
    case pause
    /// Resume playback.
    case resume
    /// Stop playback and leave.
    case stop
}

/// A session's capture state with its lease, as events and status carry it.
public struct CaptureSnapshot: Sendable, Equatable {
    /// The state.
    public let state: CaptureState
    /// Why it is in this state: `session-start`, `reported` or `lease-lapsed`.
    public let reason: String
    /// When it entered this state.
    public let since: Date
    /// The last applied report's sequence number.
    public let seq: UInt64?
    /// When the client observed the last applied report.
    public let observedAt: Date?
    /// When the current lease runs out.
    public let leaseExpiresAt: Date?
}

/// Something that happened to a session, streamed to its event subscribers.
public enum SessionEvent: Sendable, Equatable {
    /// The capture state changed (or, first on every stream, what it is now).
    case captureState(CaptureSnapshot)
    /// An operator sent a command.
    case command(SessionCommand, at: Date)
    /// The session was revoked; the stream ends after this.
    case revoked(at: Date)
}

/// Fans session events out to subscribers (event streams). Delivery runs on the publisher's thread,
/// outside the hub's lock; a subscriber that reports itself gone is dropped.
public final class SessionEventHub: Sendable {
    /// A subscriber: takes the event and its event ID (the event's number in its session when the
    /// store every node shares holds it, else nil) and returns false when it can take no more events.
    public typealias Subscriber = @Sendable (SessionEvent, _ id: Int64?) -> Bool

    private struct State {
        var nextID: UInt64 = 0
        var subscribers: [String: [UInt64: Subscriber]] = [:]
    }

    private let state = Mutex(State())

    /// An empty hub.
    public init() {}

    /// Adds a subscriber for `session`; returns the ID that `unsubscribe` takes.
    public func subscribe(session: String, _ subscriber: @escaping Subscriber) -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            state.subscribers[session, default: [:]][state.nextID] = subscriber
            return state.nextID
        }
    }

    /// Removes a subscriber.
    public func unsubscribe(session: String, id: UInt64) {
        state.withLock { state in
            state.subscribers[session]?[id] = nil
            if state.subscribers[session]?.isEmpty == true { state.subscribers[session] = nil }
        }
    }

    /// Delivers `event`, with its event ID when it has one, to every subscriber of `session`.
    public func publish(session: String, _ event: SessionEvent, id eventID: Int64? = nil) {
        let targets = state.withLock { $0.subscribers[session] ?? [:] }
        for (id, subscriber) in targets where !subscriber(event, eventID) {
            unsubscribe(session: session, id: id)
        }
    }

    /// Subscribers across all sessions.
    public var subscriberCount: Int {
        state.withLock { $0.subscribers.values.reduce(0) { $0 + $1.count } }
    }
}
