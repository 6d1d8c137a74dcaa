import CaptureMonitor
import FoundationEssentials
import MediaCore
import Protection
import SystemSupport

/// The demux/decode loop and the stages behind it. It runs on the player's pipeline thread and owns the
/// FFmpeg objects; in fast mode it also protects and writes each frame itself, in realtime it feeds the
/// audio renderer and the video presenter.
final class Pipeline {
    struct AudioStage {
        let index: Int
        let decoder: Decoder
        let timeBase: Double
        let resampler: Resampler
        let format: AudioFormat
    }

    struct VideoStage {
        let index: Int
        let decoder: Decoder
        let timeBase: Double
        let info: StreamInfo
    }

    let options: PlayerOptions
    let input: InputContext
    let monitor: CaptureMonitor
    let audio: AudioStage?
    let video: VideoStage?
    private let startOffset: Double
    private let endMedia: Double
    weak var player: Player?

    // Sinks.
    private var file: FileSink?
    private var videoSink: VideoSink
    private var masker: VideoMasker
    private var protector: AudioProtector?
    private var renderer: AudioRenderer?
    private var presenter: VideoPresenter?
    private var device: AudioDevice?
    private var wallClock: WallClock?
    private var window: WindowVideoSink?
    private let switches: OutputSwitches

    // Progress.
    private var serial = 0
    private var skipUntil: Double
    private var loopOffset = 0.0
    private var audioDone = false
    private var videoDone = false
    private var lastMedia: Double
    private var nextAudioMedia: Double?
    private var damaged = 0
    private var lastDamageWarning = -Double.infinity
    private var videoFrames = 0
    private var videoMasked = 0
    /// Video packets handed to the decoder, and pictures it returned: packets and no picture at all at
    /// the end means the video cannot be decoded (an SPS claiming a size FFmpeg or the limit refuses).
    private var videoPacketsSent = 0
    private var videoPicturesDecoded = 0
    private let packet = Packet()

    /// The realtime outputs as other threads (the player's controls) see them.
    let outputs: RealtimeOutputs

    init(
        options: PlayerOptions, input: InputContext, audioIndex: Int?, videoIndex: Int?, monitor: CaptureMonitor,
        outputs: RealtimeOutputs, switches: OutputSwitches
    ) throws(PlayerError) {
        self.options = options
        self.switches = switches
        self.outputs = outputs
        self.input = input
        self.monitor = monitor
        // Media time is what a user sees on a clock: 0 is the first presented sample, after priming
        // samples the decoder drops (`--simulate-recording` intervals are in this time).
        startOffset = input.presentationStartSeconds
        skipUntil = options.start
        lastMedia = options.start
        endMedia = options.length.map { options.start + $0 } ?? .infinity
        input.discardStreams(except: Set([audioIndex, videoIndex].compactMap { $0 }))
        do {
            if let index = audioIndex {
                let info = input.streams[index]
                let decoder = try input.makeDecoder(streamIndex: index, threads: 1)
                let format = AudioFormat(
                    sampleRate: info.sampleRate, channelCount: max(1, info.channelCount), sampleFormat: .float)
                audio = AudioStage(
                    index: index, decoder: decoder, timeBase: info.timeBase.doubleValue,
                    resampler: Resampler(output: format), format: format)
            } else {
                audio = nil
            }
            if let index = videoIndex {
                let info = input.streams[index]
                let decoder = try input.makeDecoder(streamIndex: index, threads: options.decoderThreads)
                video = VideoStage(index: index, decoder: decoder, timeBase: info.timeBase.doubleValue, info: info)
            } else {
                video = nil
            }
        } catch {
            throw PlayerError(
                error.kind == .unsupported ? .inputUnsupported : .other, "'\(options.path)': \(error.message)")
        }
        masker = try VideoMasker(monitor: monitor, style: options.mask)
        videoSink = NullVideoSink()
        if case .file(let path) = options.output {
            let sink = try FileSink(path: path, audio: audio?.format, video: video?.info)
            file = sink
            if sink.hasVideo { videoSink = FileVideoSink(file: sink) }
        }
        if let audio {
            protector = AudioProtector(
                monitor: monitor, sampleRate: audio.format.sampleRate, channels: audio.format.channelCount,
                volume: Float(options.volume), drivesMonitor: true)
        }
    }

    // MARK: Running

    func run() {
        let realtime = options.pacing == .realtime
        var error: PlayerError?
        // Outputs first: opening the sound card silences standard error for a moment (ALSA prints while
        // SDL probes), and nothing the event thread prints should fall into that gap.
        do throws(PlayerError) {
            if realtime { try startRealtimeOutputs() }
            player?.post(.started(player!.status))
            if options.start > 0 { try seekInput(to: options.start) }
            try demuxLoop()
            if video != nil, videoPacketsSent > 0, videoPicturesDecoded == 0,
                player?.control.withLock({ $0.stopRequested }) != true
            {
                throw PlayerError(
                    .inputPictureTooLarge,
                    "'\(options.path)': not one of \(videoPacketsSent) video packets decodes to a picture: "
                        + "the video's header is damaged or claims a picture size over the limit of "
                        + "\(PictureSizeLimit(maxPixels: options.maxPixels))")
            }
        } catch let failure {
            error = failure
        }
        var reason = error == nil ? "end" : "error"
        if player?.control.withLock({ $0.stopRequested }) == true { reason = "stopped" }
        if realtime { finishRealtimeOutputs(waitForDrain: error == nil && reason == "end") }
        // A sink that failed on another thread (the presenter, the audio tap) stopped playback and left
        // its error here.
        if error == nil, let failure = player?.control.withLock({ $0.error }) {
            error = failure
            reason = "error"
        }
        if let file {
            if error == nil && reason != "stopped" {
                do { try file.finish() } catch let failure { error = failure }
            } else {
                file.abandon()
            }
            if error != nil { reason = "error" }
        }
        let audioCounts = renderer?.counts ?? (protector?.frames ?? 0, protector?.protectedFrames ?? 0)
        let videoCounts = presenter?.counts ?? (videoFrames, videoMasked, 0)
        let summary = PlayerSummary(
            reason: reason, position: max(0, monitor.now.media, min(lastMedia, endMedia)), audioFrames: audioCounts.0,
            audioFramesProtected: audioCounts.1, videoFrames: videoCounts.0, videoFramesMasked: videoCounts.1,
            videoFramesDropped: videoCounts.2, stateChanges: player?.control.withLock { $0.stateChanges } ?? 0,
            damagedPackets: damaged, error: error?.message, flicker: window?.flickerReport)
        player?.finish(summary, error: error)
    }

    private func demuxLoop() throws(PlayerError) {
        var playsLeft = options.loops == 0 ? Int.max : options.loops
        var consecutiveErrors = 0
        var truncatedAt: Double?
        while true {
            if try handleControl() { return }
            let step: ReadStep
            do {
                step = try input.read(into: packet)
                consecutiveErrors = 0
            } catch {
                // A stop interrupts a read that waits for data; it is no damage.
                if player?.control.withLock({ $0.stopRequested }) ?? true { return }
                if input.isAtEndOfFile {
                    truncatedAt = lastMedia
                    step = .endOfStream
                } else {
                    consecutiveErrors += 1
                    noteDamage("\(error.message)")
                    if consecutiveErrors > 100 {
                        throw PlayerError(.inputTruncated, "'\(options.path)': unreadable past \(format(lastMedia)) s")
                    }
                    continue
                }
            }
            if step == .packet {
                try route(packet)
                if (audio == nil || audioDone) && (video == nil || videoDone) { try drainDecoders() } else { continue }
            } else {
                try drainDecoders()
            }
            if truncatedAt == nil, options.length == nil, let duration = input.durationSeconds,
                lastMedia < duration * 0.9 - 0.5, input.isAtEndOfFile
            {
                truncatedAt = lastMedia
            }
            if let truncatedAt {
                throw PlayerError(
                    .inputTruncated,
                    "'\(options.path)': truncated: the data ends at \(format(truncatedAt)) s of \(format(input.durationSeconds ?? 0)) s"
                )
            }
            playsLeft -= 1
            if playsLeft <= 0 { return }
            loopOffset += max(0, min(lastMedia, endMedia) - options.start)
            try seekInput(to: options.start, loop: true)
        }
    }

    /// Applies a pending stop, seek or (in fast mode) pause; returns true to stop.
    private func handleControl() throws(PlayerError) -> Bool {
        guard let player else { return true }
        let (stop, seek) = player.control.wait(until: {
            !$0.paused || $0.stopRequested || $0.seek != nil || self.options.pacing == .realtime
        }) {
            control -> (Bool, Double?) in
            defer { control.seek = nil }
            return (control.stopRequested, control.seek)
        }
        if stop { return true }
        if let seek {
            try seekInput(to: seek)
            player.post(.seeked(player.status))
        }
        return false
    }

    private func seekInput(to media: Double, loop: Bool = false) throws(PlayerError) {
        // Audio decoders need the frames before the target to rebuild their state (AAC's overlap, MP3's
        // bit reservoir), so the demuxer starts early and the decoded frames before `media` are dropped.
        let preroll = media > 0 && audio != nil ? 0.5 : 0
        do {
            try input.seek(toSeconds: max(0, media - preroll) + startOffset)
        } catch {
            throw PlayerError(.other, "'\(options.path)': \(error)")
        }
        audio?.decoder.flush()
        video?.decoder.flush()
        skipUntil = media
        audioDone = false
        videoDone = false
        nextAudioMedia = nil
        lastMedia = media
        if !loop {
            if let renderer { serial = renderer.flush(timeline: media + loopOffset) }
            if let presenter { serial = max(serial, presenter.flush()) }
            wallClock?.set(media + loopOffset)
            monitor.seek(toMedia: media)
        }
    }

    private func route(_ packet: Packet) throws(PlayerError) {
        if let audio, packet.streamIndex == audio.index, !audioDone {
            if !send(packet, to: audio.decoder) {
                try receiveAudio(audio)
                _ = send(packet, to: audio.decoder)
            }
            try receiveAudio(audio)
        } else if let video, packet.streamIndex == video.index, !videoDone {
            videoPacketsSent += 1
            if !send(packet, to: video.decoder) {
                try receiveVideo(video)
                _ = send(packet, to: video.decoder)
            }
            try receiveVideo(video)
        }
    }

    /// Sends a packet; returns false when the decoder is full (its frames must be received first).
    /// Undecodable data is noted and counts as taken.
    private func send(_ packet: Packet, to decoder: Decoder) -> Bool {
        do {
            if packet.isCorrupt { noteDamage("corrupt packet") }
            return try decoder.send(packet)
        } catch {
            noteDamage(error.message)
            return true
        }
    }

    private func drainDecoders() throws(PlayerError) {
        if let audio {
            _ = try? audio.decoder.send(nil)
            try receiveAudio(audio)
            audioDone = true
        }
        if let video {
            _ = try? video.decoder.send(nil)
            try receiveVideo(video)
            videoDone = true
        }
    }

    private func noteDamage(_ what: String) {
        damaged += 1
        if lastMedia - lastDamageWarning >= 1 {
            lastDamageWarning = lastMedia
            player?.post(.warning("damaged data near \(format(lastMedia)) s skipped (\(what))"))
        }
    }

    // MARK: Audio

    /// The decoder's next frame, or nil when it needs input; undecodable data is noted and skipped.
    private func nextFrame(from decoder: Decoder, _ kind: String) -> Frame? {
        while true {
            let frame = Frame()
            do {
                guard try decoder.receive(into: frame) == .output else { return nil }
            } catch {
                noteDamage(error.message)
                continue
            }
            if frame.isCorrupt { noteDamage("corrupt \(kind) frame") }
            return frame
        }
    }

    private func receiveAudio(_ stage: AudioStage) throws(PlayerError) {
        while let frame = nextFrame(from: stage.decoder, "audio") {
            let rate = Double(stage.format.sampleRate)
            let converted: Frame
            do { converted = try stage.resampler.convert(frame) } catch {
                noteDamage(error.message)
                continue
            }
            var media =
                frame.pts == noTimestamp
                ? (nextAudioMedia ?? skipUntil) : Double(frame.pts) * stage.timeBase - startOffset
            // Samples run on from the previous frame when its timestamp says so to within one tick of
            // the time base: Matroska's millisecond timestamps would otherwise move each frame by up
            // to half a millisecond and the schedule's switch with it.
            if let next = nextAudioMedia, abs(media - next) <= max(stage.timeBase, 1 / rate) { media = next }
            var count = converted.sampleCount
            var skip = 0
            if media < skipUntil {
                skip = Int(roundingAndClamping: (skipUntil - media) * rate, to: 0...count)
                media += Double(skip) / rate
                count -= skip
            }
            if media + Double(count) / rate > endMedia {
                count = Int(roundingAndClamping: (endMedia - media) * rate, to: 0...count)
                audioDone = true
            }
            nextAudioMedia = media + Double(count) / rate
            guard count > 0 else { continue }
            lastMedia = max(lastMedia, media + Double(count) / rate)
            try deliverAudio(converted, skip: skip, count: count, media: media)
        }
    }

    private func deliverAudio(_ frame: Frame, skip: Int, count: Int, media: Double) throws(PlayerError) {
        let channels = audio!.format.channelCount
        do {
            try frame.withUnsafeMutableAudioPlanes { planes in
                let base = UnsafeMutableRawPointer(planes[0].base).assumingMemoryBound(to: Float.self)
                let samples = UnsafeMutableBufferPointer(start: base + skip * channels, count: count * channels)
                if let renderer {
                    renderer.push(Array(samples), media: media, timeline: media + loopOffset, serial: serial)
                } else if let protector {
                    let muted = player?.control.withLock { $0.muted } ?? false
                    protector.process(samples, mediaStart: media, userMuted: muted)
                    try file?.writeAudio(UnsafeBufferPointer(samples))
                }
            }
        } catch let error as PlayerError {
            throw error
        } catch {
            throw PlayerError(.other, "\(error)")
        }
    }

    // MARK: Video

    private func receiveVideo(_ stage: VideoStage) throws(PlayerError) {
        while let frame = nextFrame(from: stage.decoder, "video") {
            videoPicturesDecoded += 1
            guard frame.pts != noTimestamp else { continue }
            let media = Double(frame.pts) * stage.timeBase - startOffset
            let rate = stage.info.frameRate.doubleValue
            let duration =
                frame.duration > 0 ? Double(frame.duration) * stage.timeBase : (rate > 0 ? 1 / rate : 1.0 / 25)
            if media + duration <= skipUntil + 1e-6 { continue }
            if media >= endMedia - 1e-6 {
                videoDone = true
                continue
            }
            if audio == nil || audioDone { lastMedia = max(lastMedia, media + duration) }
            let item = VideoItem(frame: frame, media: media, timeline: media + loopOffset, duration: duration)
            if let presenter {
                let renderer = self.renderer
                presenter.push(item, serial: serial) {
                    renderer.map { $0.queuedSeconds < 0.3 && !$0.isDrained } ?? false
                }
            } else {
                try presentNow(item)
            }
        }
    }

    /// Fast mode: masks and hands the frame to the sink on this thread.
    private func presentNow(_ item: VideoItem) throws(PlayerError) {
        if audio == nil || audioDone { Self.drive(monitor, to: item.media) }
        let mask = masker.mustMask(mediaTime: item.media, duration: item.duration)
        let output = mask ? try masker.masked(item.frame) : item.frame
        try videoSink.present(output, outputTime: item.timeline - options.start, masked: mask)
        videoFrames += 1
        if mask { videoMasked += 1 }
    }

    /// Moves the monitor's media time to `media`, stopping at each scheduled change on the way so that
    /// events carry the exact time of the change. A jump across more than `maximumSteps` changes (a gap of
    /// years in a file's timestamps under `every:1`) goes straight to `media`, as a seek would, instead of
    /// stepping through billions of them.
    static func drive(_ monitor: CaptureMonitor, to media: Double) {
        var time = monitor.now.media
        if media < time - 1e-6 {
            monitor.seek(toMedia: media)
            return
        }
        var steps = 0
        while steps < maximumSteps, let change = monitor.nextChange(afterMedia: time), change <= media {
            monitor.advance(toMedia: change)
            time = change
            steps += 1
        }
        monitor.advance(toMedia: media)
    }

    /// How many scheduled changes `drive` announces one by one between two frames.
    static let maximumSteps = 1_000

    // MARK: Realtime outputs

    private func startRealtimeOutputs() throws(PlayerError) {
        let start = options.start
        if let video, case .device = options.output, case .window(let required) = options.videoOutput {
            do {
                let window = try WindowVideoSink(
                    title: "guard-play: \(URL(fileURLWithPath: options.path).lastPathComponent)",
                    width: video.info.width, height: video.info.height,
                    masker: try VideoMasker(monitor: monitor, style: options.mask), monitor: monitor,
                    switches: switches, flicker: options.flicker
                ) { [weak player = self.player] warning in player?.post(.warning(warning)) }
                let player = self.player
                window.onKey { key in player?.press(key) }
                self.window = window
                videoSink = window
            } catch {
                if required { throw error }
                player?.post(.warning("\(error.message); playing without a window"))
            }
        }
        if let audio, let protector {
            let renderer = AudioRenderer(
                protector: protector, sampleRate: audio.format.sampleRate, channels: audio.format.channelCount,
                start: start)
            renderer.setUserMuted(options.muted)
            renderer.switches = switches
            if let file {
                let player = self.player
                renderer.tap = { samples in
                    do { try file.writeAudio(samples) } catch {
                        player?.fail(error as? PlayerError ?? PlayerError(.output, "\(error)"))
                    }
                }
            }
            self.renderer = renderer
            var device: AudioDevice? = nil
            if case .device = options.output {
                do {
                    device = try SDLAudioDevice(
                        renderer: renderer, sampleRate: audio.format.sampleRate,
                        channels: audio.format.channelCount)
                } catch {
                    player?.control.withLock { $0.output = "null (no audio device)" }
                    player?.post(.warning("\(error.message); playing in real time without sound"))
                }
            }
            self.device =
                device
                ?? EmulatedAudioDevice(
                    renderer: renderer, sampleRate: audio.format.sampleRate, channels: audio.format.channelCount)
            self.device?.start()
        }
        if video != nil {
            let clock: @Sendable () -> Double
            var drive: (@Sendable (Double) -> Void)? = nil
            if let renderer {
                clock = { renderer.clock }
            } else {
                let wall = WallClock(timeline: start)
                wall.run()
                wallClock = wall
                clock = { wall.now }
                let monitor = self.monitor
                drive = { media in Pipeline.drive(monitor, to: media) }
            }
            let player = self.player
            let presenter = VideoPresenter(
                masker: masker, sink: videoSink, start: start, drive: drive, switches: switches,
                fail: { error in player?.fail(error) })
            presenter.run(clock: clock)
            self.presenter = presenter
        }
        if window != nil { player?.control.withLock { $0.output += " + window" } }
        outputs.install(renderer: renderer, presenter: presenter, wallClock: wallClock)
        // Controls used before the outputs existed (a pause before start) apply now; later ones go
        // through `outputs` directly.
        if let control = player?.control.withLock({ ($0.paused, $0.muted) }) {
            outputs.setPaused(control.0)
            outputs.setMuted(control.1)
        }
    }

    private func finishRealtimeOutputs(waitForDrain: Bool) {
        renderer?.markEnded()
        presenter?.markEnded()
        if waitForDrain { renderer?.waitUntilDrained() }
        presenter?.join()
        if waitForDrain, let renderer {
            // Let the device play out what it holds.
            MonotonicSeconds.sleep(renderer.latency)
        }
        device?.stop()
        renderer?.stop()
        // After the sound card: SDL's subsystems are opened and closed one at a time.
        window?.close()
    }

    private func format(_ seconds: Double) -> String { String(cFormat: "%.1f", seconds) }
}

/// The realtime outputs (audio renderer, video presenter, wall clock), installed by the pipeline thread
/// once it has made them and used by the player's controls from any thread.
final class RealtimeOutputs: Sendable {
    private struct Parts {
        var renderer: AudioRenderer?
        var presenter: VideoPresenter?
        var wallClock: WallClock?
    }

    private let parts = Guarded(Parts())

    /// Makes the outputs reachable by the controls.
    func install(renderer: AudioRenderer?, presenter: VideoPresenter?, wallClock: WallClock?) {
        parts.withLock { $0 = Parts(renderer: renderer, presenter: presenter, wallClock: wallClock) }
    }

    /// Stops the outputs at once (a stop request).
    func stop() {
        let parts = parts.withLock { $0 }
        parts.renderer?.stop()
        parts.presenter?.stop()
    }

    /// Pauses or resumes the outputs and the clock.
    func setPaused(_ paused: Bool) {
        let parts = parts.withLock { $0 }
        parts.renderer?.setPaused(paused)
        parts.presenter?.setPaused(paused)
        if paused { parts.wallClock?.hold() } else { parts.wallClock?.run() }
    }

    /// Applies the user's mute to the audio leaving the renderer.
    func setMuted(_ muted: Bool) {
        parts.withLock { $0 }.renderer?.setUserMuted(muted)
    }
}
