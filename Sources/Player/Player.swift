public import CaptureMonitor
import FoundationEssentials
import MediaCore
import Protection

/// Plays one media file with capture protection, and is the control surface for it: pause, resume, seek,
/// mute, status and an event stream — what the command line's keys and the gateway's REST `--control`
/// drive.
///
/// Lifecycle: `init` opens and checks the input, the decoders and the output (so bad input fails before
/// anything plays); `start()` launches the threads the player owns (the demux/decode pipeline, and in
/// realtime a video presenter, an audio device or its emulation, and the video window with its own
/// thread when `videoOutput` asks for one); `wait()` returns the summary when
/// playback ends. Events reach listeners in order on the player's own event thread, never on an audio
/// callback.
public final class Player: Sendable {
    struct Control {
        var paused = false
        var muted: Bool
        var seek: Double?
        var stopRequested = false
        var started = false
        var summary: PlayerSummary?
        var error: PlayerError?
        var events: [PlayerEvent] = []
        var eventsClosed = false
        /// False until the outputs are open (the `started` event) or playback has ended: opening the
        /// sound card points standard error at /dev/null for a moment, and a notice queued before
        /// `start()` must not be printed into that gap.
        var delivering = false
        var listeners: [@Sendable (PlayerEvent) -> Void] = []
        var manual: ManualCaptureSource?
        var output = ""
        var stateChanges = 0
    }

    let control: Guarded<Control>
    /// The options it plays with.
    public let options: PlayerOptions
    /// The capture-state monitor it follows.
    public let monitor: CaptureMonitor
    /// The file's duration in seconds, or nil when unknown.
    public let duration: Double?
    /// True when an audio stream plays.
    public let hasAudio: Bool
    /// True when a video stream plays.
    public let hasVideo: Bool
    private let pipeline: Transfer<Pipeline>
    private let outputs = RealtimeOutputs()
    private let switches = OutputSwitches()
    private let threads = Guarded<[PlayerThread]>([])
    /// Ends a read that waits for data (a live playlist's next reload) when playback stops.
    private let interruption = InputInterruption()

    /// Opens the input and the output and prepares every stage; throws a `PlayerError` whose kind tells
    /// what is wrong with the input or output.
    public init(options: PlayerOptions, monitor: CaptureMonitor) throws(PlayerError) {
        self.options = options
        self.monitor = monitor
        let input = try InputProbe.open(
            options.path, interruption: interruption, pictureLimit: PictureSizeLimit(maxPixels: options.maxPixels))
        // Writing the input over itself would replace the only copy with its own (maybe lossy) decode.
        if case .file(let path) = options.output, PathIdentity(path).isSame(as: PathIdentity(options.path)) {
            throw PlayerError(
                .outputIsInput,
                "--output \(path) is the input \(options.path): writing it would replace the source; "
                    + "choose another file")
        }
        duration = input.durationSeconds
        let audioIndex = options.audioEnabled ? input.bestStream(.audio) : nil
        let videoIndex = options.videoEnabled ? input.bestStream(.video) : nil
        guard audioIndex != nil || videoIndex != nil else {
            throw PlayerError(.inputNoStreams, "'\(options.path)': nothing left to play with these options")
        }
        var control = Control(muted: options.muted)
        switch options.output {
        case .device: control.output = "device"
        case .null: control.output = "null"
        case .file(let path): control.output = path
        }
        self.control = Guarded(control)
        let pipeline = try Pipeline(
            options: options, input: input, audioIndex: audioIndex, videoIndex: videoIndex, monitor: monitor,
            outputs: outputs, switches: switches)
        hasAudio = pipeline.audio != nil
        hasVideo = pipeline.video != nil
        self.pipeline = Transfer(pipeline)
        pipeline.player = self
    }

    // MARK: Control

    /// Starts playback on the player's threads; returns at once.
    public func start() {
        let first = control.withLock { control -> Bool in
            defer { control.started = true }
            return !control.started
        }
        guard first else { return }
        // The state at the start goes out with the `started` event; listeners hear of changes after it.
        monitor.seek(toMedia: options.start)
        monitor.addListener { [weak self] event in
            guard let self else { return }
            self.control.withLock { $0.stateChanges += 1 }
            self.post(.capture(event, protecting: event.isProtecting(under: self.monitor.policy)))
        }
        switches.deliver { [weak self] change in self?.post(.protection(change)) }
        let events = PlayerThread(name: "guard-play events") { [self] in deliverEvents() }
        let pipeline = self.pipeline
        let worker = PlayerThread(name: "guard-play pipeline") { pipeline.value.run() }
        threads.withLock { $0 = [events, worker] }
    }

    /// Pauses playback (output stops; the capture state is still followed).
    public func pause() { setPaused(true) }

    /// Resumes after `pause()`.
    public func resume() { setPaused(false) }

    /// Pauses or resumes; returns true when now paused.
    @discardableResult
    public func togglePause() -> Bool {
        let paused = !control.withLock { $0.paused }
        setPaused(paused)
        return paused
    }

    /// Jumps to `seconds` of media time (clamped to the file).
    public func seek(to seconds: Double) {
        let target = max(0, min(seconds, (duration ?? .infinity) - 0.01))
        control.withLock { $0.seek = target }
    }

    /// Jumps `delta` seconds from the current position.
    public func seek(by delta: Double) { seek(to: status.position + delta) }

    /// Mutes or unmutes the audio (the user's mute; protection mutes regardless).
    public func setMuted(_ muted: Bool) {
        control.withLock { $0.muted = muted }
        outputs.setMuted(muted)
        post(.muted(muted, status))
    }

    /// Flips the user's mute; returns true when now muted.
    @discardableResult
    public func toggleMute() -> Bool {
        let muted = !control.withLock { $0.muted }
        setMuted(muted)
        return muted
    }

    /// Flips a simulated recording on or off (the `r` key): a manual source that reports `capturing`.
    @discardableResult
    public func toggleSimulatedRecording() -> Bool {
        let manual = control.withLock { control -> ManualCaptureSource in
            if let manual = control.manual { return manual }
            let manual = ManualCaptureSource(name: "simulated-key")
            control.manual = manual
            return manual
        }
        if !monitor.isAttached(manual.name) { monitor.attach(manual) }
        let on = manual.toggle()
        monitor.advance(toMedia: monitor.now.media)
        return on
    }

    /// Adds a notice to the event stream (before `start()`, it comes before the `start` event).
    public func notify(_ message: String) {
        post(.notice(message))
    }

    /// Records in the event stream that a screenshot tool saved `path` (the audit trail; the capture
    /// state does not change, since a screenshot cannot be seen coming).
    public func noteScreenshot(_ path: String) {
        post(.screenshotSaved(path: path, protecting: monitor.isProtecting))
    }

    /// Does what a key asks, from a terminal or the video window.
    public func press(_ key: PlayerKey) {
        switch key {
        case .pause: togglePause()
        case .seekBack: seek(by: -5)
        case .seekForward: seek(by: 5)
        case .mute: toggleMute()
        case .record: toggleSimulatedRecording()
        case .quit: stop()
        }
    }

    /// Deletes what this process wrote so far for output `path`, if anything: for an exit that cannot
    /// wait for the player to finish (the target itself is never touched).
    public static func removePartialOutput(for path: String) {
        try? FileManager.default.removeItem(atPath: FileSink.partialPath(for: path))
    }

    /// Stops playback; `wait()` then returns with reason `stopped`.
    public func stop() {
        control.withLock { $0.stopRequested = true }
        interruption.interrupt()
        outputs.stop()
    }

    /// Calls `listener` with every event from now on, in order, on the player's event thread.
    public func addListener(_ listener: @escaping @Sendable (PlayerEvent) -> Void) {
        control.withLock { $0.listeners.append(listener) }
    }

    /// Blocks until playback ends and every event has been delivered; returns the summary or throws the
    /// error that ended playback.
    public func wait() throws(PlayerError) -> PlayerSummary {
        let (summary, error) = control.wait(until: { $0.summary != nil && $0.eventsClosed && $0.events.isEmpty }) {
            ($0.summary!, $0.error)
        }
        for thread in threads.withLock({ $0 }) { thread.join() }
        if let error { throw error }
        return summary
    }

    /// A snapshot of position, state and flags.
    public var status: PlayerStatus {
        let capture = monitor.current
        let (paused, muted, output) = control.withLock { ($0.paused, $0.muted, $0.output) }
        return PlayerStatus(
            path: options.path, position: max(0, monitor.now.media), duration: duration,
            end: options.length.map { min(duration ?? .infinity, options.start + $0) } ?? duration, isPaused: paused,
            isMuted: muted, isProtecting: capture.isProtecting(under: monitor.policy), capture: capture,
            mask: options.mask.description, output: output, hasAudio: hasAudio, hasVideo: hasVideo)
    }

    // MARK: Internals used by the pipeline

    private func setPaused(_ paused: Bool) {
        control.withLock { $0.paused = paused }
        outputs.setPaused(paused)
        post(.paused(paused, status))
    }

    /// Queues an event for the event thread.
    func post(_ event: PlayerEvent) {
        control.withLock { control in
            guard !control.eventsClosed else { return }
            control.events.append(event)
            switch event {
            case .started: control.delivering = true
            case .finished: control.eventsClosed = true
            default: break
            }
        }
    }

    /// Records a failure from an output thread and stops playback; the first failure wins.
    func fail(_ error: PlayerError) {
        control.withLock { control in
            if control.error == nil { control.error = error }
        }
        stop()
    }

    /// Records the end of playback.
    func finish(_ summary: PlayerSummary, error: PlayerError?) {
        control.withLock { control in
            if let error { control.error = error }
        }
        post(.finished(summary))
        // The player detaches only what it attached itself; sources others attached outlive playback.
        let manual = control.withLock { control in
            control.summary = summary
            return control.manual
        }
        if let manual { monitor.detach(source: manual.name) }
    }

    /// The event thread: delivers events in order, and ticks the monitor every 100 ms so that a live
    /// source's lapsed lease turns the state `unknown` even while paused.
    private func deliverEvents() {
        while true {
            monitor.tick()
            let (batch, listeners, closed): ([PlayerEvent], [@Sendable (PlayerEvent) -> Void], Bool) = control.wait(
                until: { ($0.delivering && !$0.events.isEmpty) || $0.eventsClosed }, timeout: 0.1
            ) {
                control in
                guard control.delivering || control.eventsClosed else { return ([], control.listeners, false) }
                let batch = control.events
                control.events.removeAll()
                return (batch, control.listeners, control.eventsClosed)
            }
            for event in batch { for listener in listeners { listener(event) } }
            if closed && control.withLock({ $0.events.isEmpty }) { return }
        }
    }
}

/// The player's keys, the same on a terminal and in the video window.
public enum PlayerKey: Sendable, Hashable {
    /// Space: pause or resume.
    case pause
    /// ←: back 5 s.
    case seekBack
    /// →: forward 5 s.
    case seekForward
    /// `m`: mute or unmute.
    case mute
    /// `r`: a simulated recording on or off.
    case record
    /// `q` (or closing the window): stop.
    case quit
}

extension CaptureMonitor {
    /// True when a live source named `name` is attached.
    func isAttached(_ name: String) -> Bool { liveSourceNames.contains(name) }
}
