import FoundationEssentials
import Synchronization

/// The moment protection reached an output: the first muted sample handed to the device or the first
/// masked frame shown after a change (and likewise when it lifts). This is what a capture sees, so
/// detection latency is measured to here, not to the state change.
public struct OutputSwitch: Sendable, Hashable {
    /// Which output.
    public enum Output: String, Sendable, Hashable {
        /// The sound leaving the audio device callback (or the emulated device).
        case audio
        /// The picture presented to the video sink (the window, a file, or nothing).
        case video
    }

    /// The output that switched.
    public var output: Output
    /// True when it became protected (muted or masked), false when it became clear again.
    public var protecting: Bool
    /// The media time of the first sample or frame in the new state.
    public var media: Double
    /// When it happened, in Unix seconds.
    public var wall: Double

    /// Creates a switch.
    public init(output: Output, protecting: Bool, media: Double, wall: Double) {
        self.output = output
        self.protecting = protecting
        self.media = media
        self.wall = wall
    }
}

/// Collects output switches from the realtime threads (the audio callback, the presenter, the window)
/// and passes on each real change once.
final class OutputSwitches: Sendable {
    private struct State {
        var last: [OutputSwitch.Output: Bool] = [:]
        var deliver: (@Sendable (OutputSwitch) -> Void)?
    }

    private let state = Mutex(State())

    /// Sends every change to `deliver` from now on.
    func deliver(to deliver: @escaping @Sendable (OutputSwitch) -> Void) {
        state.withLock { $0.deliver = deliver }
    }

    /// Notes that `output` is now `protecting` from media time `media`, `delay` seconds from now; the
    /// first note of an output sets its state without an event.
    func note(_ output: OutputSwitch.Output, protecting: Bool, media: Double, delay: Double = 0) {
        let deliver = state.withLock { state -> (@Sendable (OutputSwitch) -> Void)? in
            defer { state.last[output] = protecting }
            return state.last[output].map { $0 != protecting } ?? false ? state.deliver : nil
        }
        deliver?(
            OutputSwitch(
                output: output, protecting: protecting, media: media, wall: Date().timeIntervalSince1970 + delay))
    }
}
