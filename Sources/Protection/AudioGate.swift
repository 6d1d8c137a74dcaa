#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Mutes audio with a raised-cosine ramp and opens it again the same way.
///
/// The gate works on interleaved `Float` samples in place. It is a value with no clock: a caller tells it
/// where in a buffer the gate switches (`Switch`), so a schedule in media time is applied at the exact
/// sample. While fully open it leaves samples untouched (bit for bit); while fully closed it writes exact
/// zeros; in between it multiplies by `0.5 - 0.5·cos(π·phase/length)`, moving one step per sample frame,
/// so a ramp lasts `rampLength` frames (at most `rampDuration`) and a reversal mid-ramp is smooth.
public struct AudioGate: Sendable, Hashable {
    /// A change of the gate's target at a frame offset inside the buffer being processed.
    public struct Switch: Sendable, Hashable {
        /// Frame index (sample index per channel) where the new target takes effect.
        public var frame: Int
        /// True to open (play), false to close (mute).
        public var open: Bool

        /// Creates a switch.
        public init(frame: Int, open: Bool) {
            self.frame = frame
            self.open = open
        }
    }

    /// Frames in a full ramp.
    public let rampLength: Int
    /// Where the ramp stands: 0 is silent, `rampLength` fully open.
    public private(set) var phase: Int
    /// The state the gate is moving to (or resting in).
    public private(set) var isOpen: Bool

    /// Creates a gate for `sampleRate`, with ramps of at most `rampDuration` seconds, open or closed.
    public init(sampleRate: Int, rampDuration: Double = 0.005, open: Bool = true) {
        rampLength = max(1, Int((Double(sampleRate) * rampDuration).rounded(.down)))
        isOpen = open
        phase = open ? rampLength : 0
    }

    /// True when the gate is fully closed and will stay so until opened.
    public var isSilent: Bool { !isOpen && phase == 0 }
    /// True when the gate is fully open and will stay so until closed.
    public var isTransparent: Bool { isOpen && phase == rampLength }

    /// The gain at `phase`: exactly 0 at 0 and exactly 1 at `rampLength`.
    public func gain(atPhase phase: Int) -> Float {
        if phase <= 0 { return 0 }
        if phase >= rampLength { return 1 }
        return Float(0.5 - 0.5 * cos(Double.pi * Double(phase) / Double(rampLength)))
    }

    /// Sets the target from the next sample on.
    public mutating func setOpen(_ open: Bool) { isOpen = open }

    /// Applies the gate to `samples` (interleaved, `channels` per frame), switching at `switches` (sorted
    /// by frame; a switch past the end is applied at the end).
    public mutating func process(
        _ samples: UnsafeMutableBufferPointer<Float>, channels: Int, switches: [Switch] = []
    ) {
        precondition(channels > 0, "a gate needs at least one channel")
        let frames = samples.count / channels
        var start = 0
        for change in switches {
            let at = min(max(change.frame, start), frames)
            run(samples, channels: channels, from: start, to: at)
            isOpen = change.open
            start = at
        }
        run(samples, channels: channels, from: start, to: frames)
    }

    private mutating func run(_ samples: UnsafeMutableBufferPointer<Float>, channels: Int, from: Int, to: Int) {
        var frame = from
        while frame < to {
            if isTransparent { return }
            if isSilent {
                for index in (frame * channels)..<(to * channels) { samples[index] = 0 }
                return
            }
            phase += isOpen ? 1 : -1
            let gain = gain(atPhase: phase)
            for channel in 0..<channels {
                let index = frame * channels + channel
                samples[index] = phase == 0 ? 0 : samples[index] * gain
            }
            frame += 1
        }
    }
}
