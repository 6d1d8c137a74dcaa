import CaptureMonitor
import FoundationEssentials
import Glibc

/// The realtime audio path: a bounded queue of decoded float chunks that the pipeline fills and a device
/// (SDL's callback, or the emulated device of the null sink) drains, with protection applied as the
/// samples leave the queue — so audio already queued when capture starts is muted too — and the audio
/// clock that video follows.
final class AudioRenderer: @unchecked Sendable {
    // Invariant: `state` is guarded by its own lock. `protector` and `tap` are used only by the render
    // thread (one device callback at a time), the only caller of `render`. `tap`, `switches` and
    // `latency` are set by the pipeline thread before the device starts and only read afterwards.
    private struct Chunk {
        var samples: [Float]
        var media: Double
        var timeline: Double
        var offset: Int
        let serial: Int
    }

    private struct State {
        var chunks: [Chunk] = []
        var queuedFrames = 0
        var serial = 0
        var ended = false
        var stopped = false
        var paused = false
        var userMuted = false
        var timeline: Double
        var renderedAt: Double?
    }

    private let state: Guarded<State>
    private let protector: AudioProtector
    private let channels: Int
    private let sampleRate: Double
    private let capacityFrames: Int
    /// Seconds between the sample handed to the device and the one heard (the device buffer).
    var latency: Double = 0
    /// Receives every rendered (protected) sample, for writing a file in realtime.
    var tap: (@Sendable (UnsafeBufferPointer<Float>) -> Void)?
    /// Told when protection reaches the samples leaving here, or leaves them.
    var switches: OutputSwitches?

    init(protector: AudioProtector, sampleRate: Int, channels: Int, start: Double, capacity: Double = 4) {
        self.protector = protector
        self.channels = channels
        self.sampleRate = Double(sampleRate)
        capacityFrames = Int(capacity * Double(sampleRate))
        state = Guarded(State(timeline: start))
    }

    /// Queues decoded samples; blocks while the queue is full. Returns false when stopped or flushed past.
    @discardableResult
    func push(_ samples: [Float], media: Double, timeline: Double, serial: Int) -> Bool {
        let frames = samples.count / channels
        return state.wait(until: {
            $0.stopped || $0.serial != serial || $0.queuedFrames + frames <= capacityFrames || $0.chunks.isEmpty
        }) {
            state in
            guard !state.stopped, state.serial == serial else { return false }
            state.chunks.append(Chunk(samples: samples, media: media, timeline: timeline, offset: 0, serial: serial))
            state.queuedFrames += frames
            return true
        }
    }

    /// Seconds of audio queued.
    var queuedSeconds: Double { state.withLock { Double($0.queuedFrames) / sampleRate } }

    /// Marks the end of the input: once the queue is empty the clock runs on with silence.
    func markEnded() { state.withLock { $0.ended = true } }

    /// Drops everything queued (a seek) and restarts the clock at `timeline`; returns the new serial.
    func flush(timeline: Double) -> Int {
        state.withLock { state in
            state.serial += 1
            state.chunks.removeAll()
            state.queuedFrames = 0
            state.ended = false
            state.timeline = timeline
            state.renderedAt = nil
            return state.serial
        }
    }

    /// Wakes and releases everyone waiting on the queue.
    func stop() { state.withLock { $0.stopped = true } }

    /// Pauses or resumes: while paused the device gets silence and the clock stands still.
    func setPaused(_ paused: Bool) {
        state.withLock { state in
            state.paused = paused
            state.renderedAt = nil
        }
    }

    /// The user's mute, applied with the gate's ramp.
    func setUserMuted(_ muted: Bool) { state.withLock { $0.userMuted = muted } }

    /// True when the input ended and every queued sample has been rendered.
    var isDrained: Bool { state.withLock { $0.ended && $0.chunks.isEmpty } }

    /// Waits until drained or stopped.
    func waitUntilDrained() {
        state.wait(until: { ($0.ended && $0.chunks.isEmpty) || $0.stopped }) { _ in }
    }

    /// The audio clock on the playback timeline: the position of the sample being heard now.
    var clock: Double {
        let now = MonotonicSeconds.now()
        return state.withLock { state in
            var position = state.timeline - latency
            if !state.paused, let renderedAt = state.renderedAt {
                position += min(max(0, now - renderedAt), latency + 0.05)
            }
            return position
        }
    }

    /// Fills `output` (interleaved) with the next samples, protected; the device callback's body.
    func render(into output: UnsafeMutableBufferPointer<Float>) {
        let wanted = output.count / channels
        var filled = 0
        var pieces: [(media: Double, from: Int, count: Int)] = []
        let (paused, muted) = state.withLock { state -> (Bool, Bool) in
            if state.paused || state.stopped { return (true, state.userMuted) }
            while filled < wanted, !state.chunks.isEmpty {
                var chunk = state.chunks[0]
                let available = chunk.samples.count / channels - chunk.offset
                let take = min(available, wanted - filled)
                chunk.samples.withUnsafeBufferPointer { source in
                    let from = source.baseAddress! + chunk.offset * channels
                    (output.baseAddress! + filled * channels).update(from: from, count: take * channels)
                }
                pieces.append((chunk.media + Double(chunk.offset) / sampleRate, filled, take))
                state.timeline = chunk.timeline + Double(chunk.offset + take) / sampleRate
                chunk.offset += take
                filled += take
                state.queuedFrames -= take
                if chunk.offset * channels >= chunk.samples.count {
                    state.chunks.removeFirst()
                } else {
                    state.chunks[0] = chunk
                }
            }
            // Once the input has ended the clock runs on through the silence, so video still plays out;
            // an underrun before that holds the clock.
            if filled < wanted, state.ended {
                state.timeline += Double(wanted - filled) / sampleRate
            }
            state.renderedAt = MonotonicSeconds.now()
            return (false, state.userMuted)
        }
        if filled < wanted {
            (output.baseAddress! + filled * channels).update(repeating: 0, count: (wanted - filled) * channels)
        }
        guard !paused else { return }
        for piece in pieces {
            let slice = UnsafeMutableBufferPointer(
                start: output.baseAddress! + piece.from * channels, count: piece.count * channels)
            protector.process(slice, mediaStart: piece.media, userMuted: muted)
            switches?.note(.audio, protecting: protector.isProtecting, media: piece.media)
            tap?(UnsafeBufferPointer(slice))
        }
    }

    /// Sample frames rendered and of those protected.
    var counts: (frames: Int, protected: Int) { (protector.frames, protector.protectedFrames) }
}

/// Monotonic time for pacing and clocks, on the same clock the capture monitor uses.
enum MonotonicSeconds {
    /// Seconds since the clock's origin.
    static func now() -> Double { MonotonicClock.seconds() }

    /// Sleeps for `seconds` (nothing when not positive; at most a second at a time).
    static func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        usleep(UInt32(min(seconds, 1) * 1_000_000))
    }
}
