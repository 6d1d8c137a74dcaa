import CaptureMonitor
import MediaCore
import Protection

/// Applies capture protection, the user's mute and the volume to float audio in media time: it asks the
/// monitor where the state changes inside each buffer and switches the gate at that exact sample.
///
/// Used by one thread at a time: the device callback, the emulated device, or the pipeline in fast mode.
final class AudioProtector {
    private let monitor: CaptureMonitor
    private var gate: AudioGate
    private let sampleRate: Double
    private let channels: Int
    private var lastMedia: Double?
    /// Linear gain; 1 leaves samples bit for bit.
    var volume: Float
    /// Sample frames processed.
    private(set) var frames = 0
    /// Sample frames processed while protection was on.
    private(set) var protectedFrames = 0
    /// True when the last sample processed was protected.
    private(set) var isProtecting = false
    /// True when this protector moves the monitor's media time (it follows the master clock).
    let drivesMonitor: Bool

    init(monitor: CaptureMonitor, sampleRate: Int, channels: Int, volume: Float, drivesMonitor: Bool) {
        self.monitor = monitor
        self.sampleRate = Double(sampleRate)
        self.channels = channels
        self.volume = volume
        self.drivesMonitor = drivesMonitor
        gate = AudioGate(sampleRate: sampleRate, open: true)
    }

    /// Protects `samples` (interleaved) whose first frame plays at media time `mediaStart`.
    func process(_ samples: UnsafeMutableBufferPointer<Float>, mediaStart: Double, userMuted: Bool) {
        let count = samples.count / channels
        guard count > 0 else { return }
        let end = mediaStart + Double(count) / sampleRate
        var event: CaptureEvent
        if drivesMonitor {
            if let lastMedia, mediaStart < lastMedia - 0.5 / sampleRate {
                event = monitor.seek(toMedia: mediaStart)
            } else {
                event = monitor.advance(toMedia: mediaStart)
            }
        } else {
            event = monitor.decision(atMedia: mediaStart)
        }
        var protecting = event.isProtecting(under: monitor.policy)
        // A scheduled change is known ahead, so the ramp down ends on the change's first sample rather
        // than starting there: a recording then holds no protected sample. It may start in the buffer
        // before the change, so changes up to one ramp past this buffer are looked at too.
        let lead = Double(gate.rampLength) / sampleRate
        if lastMedia == nil {
            // The first buffer starts in the right state with no ramp, so playback that starts under
            // capture (or one ramp before it) leaks nothing.
            let closesSoon =
                monitor.nextChange(afterMedia: mediaStart).map { change in
                    change < mediaStart + lead && monitor.decision(atMedia: change).isProtecting(under: monitor.policy)
                } ?? false
            gate = AudioGate(sampleRate: Int(sampleRate), open: !(protecting || closesSoon || userMuted))
        } else {
            gate.setOpen(!(protecting || userMuted))
        }
        var switches: [AudioGate.Switch] = []
        var segmentStart = 0
        var time = mediaStart
        while let change = monitor.nextChange(afterMedia: time), change < end + lead {
            time = change
            let frame = Int(roundingAndClamping: (change - mediaStart) * sampleRate, to: 0...(count + gate.rampLength))
            guard change < end else {
                // Past this buffer: only a ramp down that must begin in it.
                if !protecting, monitor.decision(atMedia: change).isProtecting(under: monitor.policy) {
                    let at = max(frame - gate.rampLength, switches.last?.frame ?? 0)
                    switches.append(AudioGate.Switch(frame: at, open: false))
                }
                break
            }
            let next = drivesMonitor ? monitor.advance(toMedia: change) : monitor.decision(atMedia: change)
            if protecting { protectedFrames += frame - segmentStart }
            segmentStart = frame
            let wasProtecting = protecting
            protecting = next.isProtecting(under: monitor.policy)
            let closing = protecting && !wasProtecting
            // Switches stay in order: a ramp down never starts before the switch that came before it.
            let at = closing ? max(frame - gate.rampLength, switches.last?.frame ?? 0) : frame
            switches.append(AudioGate.Switch(frame: at, open: !(protecting || userMuted)))
        }
        if protecting { protectedFrames += count - segmentStart }
        isProtecting = protecting
        frames += count
        lastMedia = end
        if drivesMonitor { monitor.advance(toMedia: end) }
        gate.process(samples, channels: channels, switches: switches)
        if volume != 1, !gate.isSilent {
            for index in samples.indices { samples[index] *= volume }
        }
    }
}
