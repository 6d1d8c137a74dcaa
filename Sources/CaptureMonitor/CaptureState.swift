/// Whether the screen is being captured, as far as GuardPlay can tell.
public enum CaptureState: String, Sendable, Hashable, CaseIterable {
    /// No source reports a capture.
    case clear
    /// At least one source reports a capture in progress.
    case capturing
    /// A source lapsed or cannot tell; protected unless the policy is `allow`.
    case unknown
}

/// What to do while the state is `unknown`.
public enum UnknownPolicy: String, Sendable, Hashable, CaseIterable {
    /// Mute and mask, as for `capturing` (the default: fail closed).
    case protect
    /// Play unprotected.
    case allow
}

/// An instant on the two timelines the monitor knows: media time (seconds of the file being played, which
/// stops while paused and jumps on a seek) and wall time (seconds of a monotonic clock).
public struct CaptureTime: Sendable, Hashable, CustomStringConvertible {
    /// Seconds of media time.
    public var media: Double
    /// Seconds on a monotonic wall clock.
    public var wall: Double

    /// Creates an instant.
    public init(media: Double, wall: Double) {
        self.media = media
        self.wall = wall
    }

    public var description: String { "media \(media) s, wall \(wall) s" }
}

/// When a report stops being believed unless it is renewed.
public enum CaptureDeadline: Sendable, Hashable {
    /// At this media time (scripted sources that follow the media).
    case media(Double)
    /// At this wall time (live sources: remote clients, detectors).
    case wall(Double)

    /// True when `time` is at or past the deadline.
    public func hasPassed(at time: CaptureTime) -> Bool {
        switch self {
        case .media(let deadline): time.media >= deadline
        case .wall(let deadline): time.wall >= deadline
        }
    }
}

/// What one source says about capture: its state, why, who, how sure, and until when to believe it.
public struct CaptureReport: Sendable, Hashable {
    /// The reporting source's name, such as `simulated`, `remote:session-1` or `process-scan`.
    public var source: String
    /// What the source sees.
    public var state: CaptureState
    /// A short human reason, such as `simulated schedule 2-5`.
    public var reason: String
    /// The capturing process, when a detector knows it.
    public var pid: Int32?
    /// The capturing application, when known.
    public var app: String?
    /// How sure the source is, from 0 to 1.
    public var confidence: Double
    /// When the report lapses unless renewed; nil for a report that holds until replaced.
    public var lease: CaptureDeadline?

    /// Creates a report.
    public init(
        source: String, state: CaptureState, reason: String, pid: Int32? = nil, app: String? = nil,
        confidence: Double = 1, lease: CaptureDeadline? = nil
    ) {
        self.source = source
        self.state = state
        self.reason = reason
        self.pid = pid
        self.app = app
        self.confidence = confidence
        self.lease = lease
    }
}

/// A change of the merged capture state: `{state, source, reason, pid?, app?, confidence, since}`.
public struct CaptureEvent: Sendable, Hashable {
    /// The merged state from `since` on.
    public var state: CaptureState
    /// The source that decided it (`none` when there are no sources).
    public var source: String
    /// Why, in a few words.
    public var reason: String
    /// The capturing process, when known.
    public var pid: Int32?
    /// The capturing application, when known.
    public var app: String?
    /// How sure the deciding source is, from 0 to 1.
    public var confidence: Double
    /// When the state took effect.
    public var since: CaptureTime

    /// Creates an event.
    public init(
        state: CaptureState, source: String, reason: String, pid: Int32? = nil, app: String? = nil,
        confidence: Double = 1, since: CaptureTime
    ) {
        self.state = state
        self.source = source
        self.reason = reason
        self.pid = pid
        self.app = app
        self.confidence = confidence
        self.since = since
    }

    /// True when output must be muted and masked under `policy`.
    public func isProtecting(under policy: UnknownPolicy) -> Bool {
        state == .capturing || (state == .unknown && policy == .protect)
    }
}
