import CaptureMonitor
import FoundationEssentials
public import MediaCore

/// Where presented video goes: nowhere, a file, or a window. Called on the presenting thread
/// (the presenter in realtime, the pipeline in fast mode), one frame at a time, in presentation order.
public protocol VideoSink: AnyObject {
    /// Shows `frame` (already masked when `masked`) at `outputTime` seconds from the start of playback.
    func present(_ frame: Frame, outputTime: Double, masked: Bool) throws(PlayerError)
}

/// Drops every frame.
final class NullVideoSink: VideoSink {
    func present(_ frame: Frame, outputTime: Double, masked: Bool) throws(PlayerError) {}
}

/// Encodes every presented frame into the output file.
final class FileVideoSink: VideoSink {
    private let file: FileSink

    init(file: FileSink) {
        self.file = file
    }

    func present(_ frame: Frame, outputTime: Double, masked: Bool) throws(PlayerError) {
        try file.writeVideo(frame, outputTime: outputTime)
    }
}

/// One decoded picture on its way to the sink.
struct VideoItem {
    let frame: Frame
    /// Seconds of media time (the schedule's time).
    let media: Double
    /// Seconds on the playback timeline (media time plus the length of earlier loops).
    let timeline: Double
    /// How long it is shown.
    let duration: Double
}

/// The realtime video path: a short queue of decoded frames and a thread that presents each when the
/// master clock reaches it, masking at presentation time and dropping frames that are late (a frame is
/// dropped when the next one is already due, as ffplay does).
final class VideoPresenter: @unchecked Sendable {
    // Invariant: the queue and flags live in `state` under its lock; `masker` and `sink` are used only
    // by the presenter thread once `run` has started it; `thread` is set and joined by the pipeline thread.
    private struct State {
        var items: [VideoItem] = []
        var serial = 0
        var ended = false
        var stopped = false
        var paused = false
        var presented = 0
        var masked = 0
        var dropped = 0
    }

    private let state = Guarded(State())
    private let capacity = 8
    private let masker: VideoMasker
    private let sink: VideoSink
    private let start: Double
    private var thread: PlayerThread?
    /// Called with each presented frame's media time when no audio drives the monitor.
    private let drive: (@Sendable (Double) -> Void)?
    /// Reports a sink failure (ends playback).
    private let fail: @Sendable (PlayerError) -> Void
    /// Told when protection reaches the presented frames, or leaves them.
    private let switches: OutputSwitches

    init(
        masker: VideoMasker, sink: VideoSink, start: Double, drive: (@Sendable (Double) -> Void)?,
        switches: OutputSwitches, fail: @escaping @Sendable (PlayerError) -> Void
    ) {
        self.masker = masker
        self.sink = sink
        self.start = start
        self.drive = drive
        self.switches = switches
        self.fail = fail
    }

    /// Queues a frame; blocks while the queue is full unless `overfill` says the audio queue is starving.
    @discardableResult
    func push(_ item: VideoItem, serial: Int, overfill: @escaping () -> Bool) -> Bool {
        let moved = Transfer(item)
        while true {
            let done: Bool? = state.wait(
                until: { $0.stopped || $0.serial != serial || $0.items.count < self.capacity || overfill() },
                timeout: 0.05
            ) { state in
                guard !state.stopped, state.serial == serial else { return false }
                if state.items.count >= capacity && !overfill() { return nil }
                state.items.append(moved.value)
                return true
            }
            if let done { return done }
        }
    }

    /// Drops queued frames (a seek); returns the new serial.
    func flush() -> Int {
        state.withLock { state in
            state.serial += 1
            state.items.removeAll()
            state.ended = false
            return state.serial
        }
    }

    /// Marks the end of the input.
    func markEnded() { state.withLock { $0.ended = true } }

    /// Pauses or resumes presentation.
    func setPaused(_ paused: Bool) { state.withLock { $0.paused = paused } }

    /// Stops the thread as soon as possible.
    func stop() { state.withLock { $0.stopped = true } }

    /// Frames presented, masked and dropped.
    var counts: (presented: Int, masked: Int, dropped: Int) {
        state.withLock { ($0.presented, $0.masked, $0.dropped) }
    }

    /// Starts presenting against `clock` (seconds on the playback timeline).
    func run(clock: @escaping @Sendable () -> Double) {
        thread = PlayerThread(name: "guard-play video") { [self] in loop(clock: clock) }
    }

    /// Waits for the presenter thread to end.
    func join() { thread?.join() }

    private enum Step {
        case finish
        case idle
        case wait(Double)
        case present(VideoItem)
    }

    private func loop(clock: () -> Double) {
        while true {
            let now = clock()
            let step: Step = state.wait(
                until: { $0.stopped || (!$0.paused && !$0.items.isEmpty) || ($0.ended && $0.items.isEmpty) },
                timeout: 0.05
            ) { state in
                if state.stopped || (state.ended && state.items.isEmpty) { return .finish }
                if state.paused || state.items.isEmpty { return .idle }
                let next = state.items.count > 1 ? state.items[1].timeline : nil
                switch FrameTiming.decide(frame: state.items[0].timeline, next: next, clock: now) {
                case .wait(let delay):
                    return .wait(delay)
                case .drop:
                    state.items.removeFirst()
                    state.dropped += 1
                    return .idle
                case .present:
                    return .present(state.items.removeFirst())
                }
            }
            switch step {
            case .finish: return
            case .idle: continue
            case .wait(let delay): MonotonicSeconds.sleep(min(delay, 0.01))
            case .present(let item):
                drive?(item.media)
                do {
                    let mask = masker.mustMask(mediaTime: item.media, duration: item.duration)
                    let frame = mask ? try masker.masked(item.frame) : item.frame
                    try sink.present(frame, outputTime: item.timeline - start, masked: mask)
                    switches.note(.video, protecting: mask, media: item.media)
                    state.withLock { state in
                        state.presented += 1
                        if mask { state.masked += 1 }
                    }
                } catch {
                    fail(error)
                    return
                }
            }
        }
    }
}

/// When to show a frame against the master clock: the presenter's pure decision, as ffplay makes it.
public enum FrameTiming: Equatable, Sendable {
    /// Too early: wait this many seconds.
    case wait(Double)
    /// Due now: present it.
    case present
    /// Late, and the next frame is already due too: drop it.
    case drop

    /// Decides for a frame due at `frame` (seconds on the playback timeline), the one after it due at
    /// `next` (nil when not decoded yet), with the clock at `clock`; frames within 1 ms count as due.
    public static func decide(frame: Double, next: Double?, clock: Double) -> FrameTiming {
        if frame - clock > 0.001 { return .wait(frame - clock) }
        if let next, next <= clock { return .drop }
        return .present
    }
}

/// The clock when no audio plays: wall time on the playback timeline, standing still while paused.
final class WallClock: Sendable {
    private struct State {
        var base: Double
        var startedAt: Double?
    }

    private let state: Guarded<State>

    init(timeline: Double) {
        state = Guarded(State(base: timeline, startedAt: nil))
    }

    /// Seconds on the playback timeline.
    var now: Double {
        state.withLock { state in state.base + (state.startedAt.map { MonotonicSeconds.now() - $0 } ?? 0) }
    }

    /// Starts or resumes the clock.
    func run() { state.withLock { if $0.startedAt == nil { $0.startedAt = MonotonicSeconds.now() } } }

    /// Stops the clock where it is.
    func hold() {
        state.withLock { state in
            if let startedAt = state.startedAt { state.base += MonotonicSeconds.now() - startedAt }
            state.startedAt = nil
        }
    }

    /// Sets the clock to `timeline`, keeping it running or held.
    func set(_ timeline: Double) {
        state.withLock { state in
            state.base = timeline
            if state.startedAt != nil { state.startedAt = MonotonicSeconds.now() }
        }
    }
}
