public import CaptureMonitor

/// What the player tells its listeners; delivered in order on the player's event thread.
public enum PlayerEvent: Sendable {
    /// Playback began.
    case started(PlayerStatus)
    /// The capture state changed (with the media position it took effect at, `event.since.media`).
    case capture(CaptureEvent, protecting: Bool)
    /// Protection reached an output, or left it: the first muted sample or masked frame after a change.
    case protection(OutputSwitch)
    /// A screenshot tool saved a picture while playing (audit only; the capture state does not change).
    case screenshotSaved(path: String, protecting: Bool)
    /// Paused or resumed.
    case paused(Bool, PlayerStatus)
    /// The user muted or unmuted.
    case muted(Bool, PlayerStatus)
    /// Playback jumped to a new position.
    case seeked(PlayerStatus)
    /// Something the user should know that does not stop playback (damaged data skipped, no audio device).
    case warning(String)
    /// How this run is set up, when it is not what the user may expect (no display, X11's policy).
    case notice(String)
    /// Playback ended (completely, by a stop, or by an error).
    case finished(PlayerSummary)
}

/// A snapshot of the player for a status line or a REST `status` call.
public struct PlayerStatus: Sendable, Hashable {
    /// The media file.
    public var path: String
    /// The media position in seconds (audio clock, or video/wall clock without audio).
    public var position: Double
    /// The file's duration in seconds, or nil when unknown.
    public var duration: Double?
    /// Where playback ends: `--start` + `--length` when that comes before the end of the file, else
    /// the duration.
    public var end: Double?
    /// True while paused.
    public var isPaused: Bool
    /// True while the user has muted.
    public var isMuted: Bool
    /// True while output is protected (muted and masked) for capture.
    public var isProtecting: Bool
    /// The capture state in force.
    public var capture: CaptureEvent
    /// How masked frames look (`black`, `pixelate`, `image:…`).
    public var mask: String
    /// Where the output goes (`device`, `null`, or the file path).
    public var output: String
    /// True when an audio stream plays.
    public var hasAudio: Bool
    /// True when a video stream plays.
    public var hasVideo: Bool
}

/// Totals at the end of playback.
public struct PlayerSummary: Sendable, Hashable {
    /// Why playback ended: `end`, `stopped` or `error`.
    public var reason: String
    /// The final media position in seconds.
    public var position: Double
    /// Audio sample frames delivered to the sink.
    public var audioFrames: Int
    /// Of which were muted (fully or partly by a ramp) for protection.
    public var audioFramesProtected: Int
    /// Video frames delivered to the sink.
    public var videoFrames: Int
    /// Of which were masked.
    public var videoFramesMasked: Int
    /// Video frames dropped because they were late (realtime only).
    public var videoFramesDropped: Int
    /// Capture-state changes during playback.
    public var stateChanges: Int
    /// Packets or frames skipped because the data was damaged.
    public var damagedPackets: Int
    /// The error that ended playback, if any.
    public var error: String?
    /// How the window presented the flicker; nil without `--flicker` or without a window.
    public var flicker: FlickerReport?
}

/// The flicker's presentation, measured by the window.
public struct FlickerReport: Sendable, Hashable {
    /// The refresh rate the display reports, in Hz (0 when it reports none).
    public var reportedRate: Double
    /// Presents per second measured over the run; nil before two presents.
    public var measuredRate: Double?
    /// Phases presented.
    public var presents = 0
    /// Refreshes that went by without a present (the phase on screen stayed two refreshes or more).
    public var missedVsyncs = 0

    /// Creates a report for a display that reports `reportedRate` Hz.
    public init(reportedRate: Double) {
        self.reportedRate = reportedRate
    }
}
