import CaptureDetectors
import CaptureMonitor
import ControlAPI
import FoundationEssentials
import Glibc
import HTTPServer
import MediaCore
import Player
import Protection
import SystemSupport

/// `guard-play FILE [options]`: plays a file with capture protection.
enum PlayCommand {
    static let help = """
        guard-play FILE [options]
          Plays FILE, muting audio and masking video while a screen capture is active or its state is unknown.

          --simulate-recording[=SPEC]  simulated screen recording: bare = the whole playback; 'A-B,C-' =
                                       intervals in media seconds; 'every:N' = clear N s, recording N s, ...
          --simulate-stall=T           a simulated detector that reports 'clear' with a 1 s lease, renewed
                                       every 0.5 s up to T s of media time (unknown from T+1 s)
          --on-unknown protect|allow   what an unknown capture state does (default protect)
          --mask black|pixelate|image:PATH   how masked video looks (default black)
          --output FILE|null           write what a capture would record (.wav .flac .m4a .mkv .mp4 .mov),
                                       or decode and drop (null); default: the sound card; never
                                       the input itself (exit 2)
          --realtime | --fast          pacing (default realtime, fast when --output is given)
          --start S  --length S        play from S seconds, for S seconds
          --volume V                   linear gain, 0 to 4 (default 1)
          --mute                       start muted
          --no-audio | --no-video      ignore that stream
          --loop N                     play N times (0 = forever)
          --status line|json|none      status display (default: a live line on a terminal)
          --threads N                  video decoder threads (default: automatic)
          --max-pixels N|WxH           refuse video with larger pictures (default 8192x8192; each side
                                       at most 8192 or the square root of N)
          --video-out auto|window|null where video goes when playing to the device (default auto: a
                                       window when DISPLAY or WAYLAND_DISPLAY is set, otherwise null)
          --flicker[=x,y,w,h]          in the window, alternate two complementary random pixel masks of
                                       the region (default the whole picture) at the display's refresh
                                       rate: one screenshot holds about half of it (needs a window)
          --capture-source LIST        what watches for capture, comma-separated: auto (process scan,
                                       remote-desktop servers, PipeWire when it runs, mirrored displays
                                       on X11, session type), process, remote-desktop, pipewire, mirror,
                                       session, remote, simulate or none (default auto; simulate with
                                       --simulate-*, none with --output)
          --on-mirror protect|allow    what a mirrored (cloned) display does (default protect)
          --poll-interval T            process scan and PipeWire renewal period: 250, 250ms, 0.25s
                                       (default 250 ms)
          --new-process-poll T|off     how often the process scanner reads the newest PID to look at
                                       new processes between scans (default 25 ms; every 10 ms while
                                       a new process may still exec a recorder)
          --recorders FILE             more recorder rules (after $XDG_CONFIG_HOME/guard-play/recorders.conf)
          --control HOST:PORT          serve the player's REST control API there (GET /v1/player, POST
                                       /v1/player/{pause,resume,seek}, PUT /v1/player/capture-state,
                                       /v1/player/events); it adds the remote capture source, and takes
                                       API tokens (scope control) from --data; HOST must be a
                                       loopback address unless --control-public is given
          --control-public             allow --control on an address other hosts can reach (plain
                                       HTTP: tokens cross the network unencrypted)
          --data DIR                   the gateway data directory holding API tokens (required with
                                       --control; made by guard-play tokens create --data DIR)
          --store URL                  take the API tokens from the gateway's PostgreSQL store instead
                                       (as guard-play serve --store; the KEK still from --data or
                                       GUARDPLAY_KEK)
          Keys on a terminal or in the window: space pause, ←/→ seek 5 s, m mute, r toggle simulated
          recording, q quit.
        """

    static let options: [Arguments.Option] = [
        .init("simulate-recording", .optionalValue), .init("simulate-stall"), .init("on-unknown"), .init("mask"),
        .init("output"), .init("realtime", .flag), .init("fast", .flag), .init("start"), .init("length"),
        .init("volume"), .init("mute", .flag), .init("no-audio", .flag), .init("no-video", .flag), .init("loop"),
        .init("status"), .init("threads"), .init("video-out"), .init("capture-source"), .init("poll-interval"),
        .init("new-process-poll"), .init("recorders", repeatable: true), .init("control"), .init("data"),
        .init("store"),
        .init("max-pixels"), .init("control-public", .flag), .init("flicker", .optionalValue),
        .init("on-mirror"),
    ]

    /// What the command line asked for, checked.
    struct Request {
        var player: PlayerOptions
        var scheduled: [any ScheduledCaptureSource]
        var policy: UnknownPolicy
        var status: StatusMode
        var capture: CaptureSelection
        var captureExplicit: Bool
        var pollInterval: Double
        /// Seconds between readings of the newest PID, or nil for none (`--new-process-poll off`).
        var newProcessPoll: Double?
        var recorders: RecorderRules
        /// `--on-mirror allow`: a mirrored display does not protect.
        var allowMirror: Bool
        /// A notice about where video goes (no display), shown when the file has video.
        var videoNotice: String?
        /// Where to serve the REST control API (`--control`), with the data directory its tokens live in.
        var control: ServeConfiguration?
    }

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        let request = try parse(arguments)
        MediaLog.setLevel(.quiet)
        let monitor = CaptureMonitor(policy: request.policy, scheduled: request.scheduled)
        let player: Player
        do {
            player = try Player(options: request.player, monitor: monitor)
        } catch {
            throw CLIError(exitCode(for: error.kind), error.message)
        }
        if let notice = request.videoNotice, player.hasVideo { player.notify(notice) }
        // Detectors start before playback, and each has reported once when `attach` returns, so the first
        // sample and frame already follow what they see.
        let sources = CaptureSources(
            monitor: monitor, interval: request.pollInterval, newProcessPoll: request.newProcessPoll,
            rules: request.recorders, allowMirror: request.allowMirror)
        let display = ProcessInfo.processInfo.environment["DISPLAY"] ?? ""
        var detectors = request.capture.resolved(
            pipeWireAvailable: PipeWireCaptureSource.isAvailable, xDisplay: !display.isEmpty)
        // The control API's capture reports come through the remote source.
        if request.control != nil { detectors.insert(.remote) }
        let notices = sources.attach(
            detectors, explicit: request.captureExplicit, remoteEndpoint: request.control != nil, player: player)
        for notice in notices { player.notify(notice) }
        let control: HTTPServer?
        do {
            control = try request.control.map { configuration throws(CLIError) in
                try PlayerControlServer.start(player: player, remote: sources.remote!, configuration: configuration)
            }
        } catch {
            sources.stop()
            throw error
        }
        let session = PlaySession(player: player, status: request.status)
        let code = session.run()
        control?.stop(grace: 1)
        sources.stop()
        return code
    }

    static func parse(_ arguments: [String]) throws(CLIError) -> Request {
        let parsed = try Arguments(arguments, options: options)
        guard let path = parsed.positionals.first else { throw CLIError(.usage, "no input file\n\(GuardPlay.usage)") }
        guard parsed.positionals.count == 1 else {
            throw CLIError(.usage, "unexpected argument '\(parsed.positionals[1])': play takes one file")
        }
        var player = PlayerOptions(path: path)
        var scheduled: [any ScheduledCaptureSource] = []
        if let spec = parsed.value("simulate-recording") {
            do { scheduled.append(try SimulatedSchedule(parsing: spec)) } catch {
                throw CLIError(.badValue, "--simulate-recording: \(error)")
            }
        }
        if let spec = parsed.value("simulate-stall") {
            do { scheduled.append(try StalledHeartbeat(parsing: spec)) } catch {
                throw CLIError(.badValue, "--simulate-stall: \(error)")
            }
        }
        let policy = try parsed.parsed("on-unknown", as: "protect or allow") { UnknownPolicy(rawValue: $0) } ?? .protect
        player.mask =
            try parsed.parsed("mask", as: "black, pixelate or image:PATH") { MaskStyle(parsing: $0) } ?? .black
        if parsed.has("realtime") && parsed.has("fast") {
            throw CLIError(.usage, "--realtime and --fast cannot be used together")
        }
        if parsed.has("no-audio") && parsed.has("no-video") {
            throw CLIError(.usage, "--no-audio and --no-video together leave nothing to play")
        }
        if let output = parsed.value("output") {
            guard !output.isEmpty else { throw CLIError(.badValue, "--output needs a file name or 'null'") }
            player.output = output == "null" ? .null : .file(path: output)
            player.pacing = .fast
        }
        if parsed.has("realtime") { player.pacing = .realtime }
        if parsed.has("fast") { player.pacing = .fast }
        if player.pacing == .fast, case .device = player.output { player.output = .null }
        player.start = try parsed.parsed("start", as: "seconds from 0 to 1e9") { seconds($0) } ?? 0
        player.length = try parsed.parsed("length", as: "seconds, more than 0 and at most 1e9") {
            seconds($0).flatMap { $0 > 0 ? $0 : nil }
        }
        player.volume =
            try parsed.parsed("volume", as: "a gain from 0 to 4") { text in
                Double(text).flatMap { $0 >= 0 && $0 <= 4 ? $0 : nil }
            } ?? 1
        player.loops =
            try parsed.parsed("loop", as: "a count, 0 for forever") { Int($0).flatMap { $0 >= 0 ? $0 : nil } } ?? 1
        player.decoderThreads =
            try parsed.parsed("threads", as: "a count from 0 to 64") {
                Int($0).flatMap { (0...64).contains($0) ? $0 : nil }
            }
            ?? 0
        player.maxPixels =
            try parsed.parsed("max-pixels", as: "a pixel count or WxH, at most 2147483647 pixels") {
                PictureSizeLimit(parsing: $0)?.maxPixels
            } ?? PictureSizeLimit.standard.maxPixels
        player.muted = parsed.has("mute")
        player.audioEnabled = !parsed.has("no-audio")
        player.videoEnabled = !parsed.has("no-video")
        let status =
            try parsed.parsed("status", as: "line, json or none") { StatusMode(rawValue: $0) }
            ?? (isatty(STDERR_FILENO) == 1 ? .line : .log)
        let environment = ProcessInfo.processInfo.environment
        var videoNotice: String?
        switch parsed.value("video-out") {
        case nil, "auto":
            let display = ["DISPLAY", "WAYLAND_DISPLAY"].contains { !(environment[$0] ?? "").isEmpty }
            player.videoOutput = display ? .window(required: false) : .null
            if !display, case .device = player.output {
                videoNotice =
                    "no display (DISPLAY and WAYLAND_DISPLAY are unset): video is decoded and protected "
                    + "but not shown"
            }
        case "window":
            guard case .device = player.output else {
                throw CLIError(.usage, "--video-out window needs the device as output, not --output")
            }
            player.videoOutput = .window(required: true)
        case "null":
            player.videoOutput = .null
        case let other?:
            throw CLIError(.badValue, "invalid value '\(other)' for --video-out: expected auto, window or null")
        }
        if parsed.has("flicker") {
            if let text = parsed.value("flicker"), !text.isEmpty {
                guard let area = FlickerArea(parsing: text) else {
                    throw CLIError(
                        .badValue, "invalid value '\(text)' for --flicker: expected x,y,w,h in picture pixels")
                }
                player.flicker = area
            } else {
                player.flicker = .picture
            }
            // The flicker lives in the window: without one it would protect nothing, so it is required.
            guard case .device = player.output, player.videoOutput != .null else {
                if case .device = player.output, parsed.value("video-out") != "null" {
                    throw CLIError(.usage, "--flicker needs the video window, and there is no display")
                }
                throw CLIError(.usage, "--flicker needs the video window, not --output or --video-out null")
            }
            player.videoOutput = .window(required: true)
        }
        let captureExplicit = parsed.has("capture-source")
        let capture: CaptureSelection
        if let text = parsed.value("capture-source") {
            capture = try CaptureSelection(parsing: text)
        } else if !scheduled.isEmpty {
            capture = CaptureSelection([.simulate])
        } else if parsed.has("output") {
            capture = CaptureSelection([.none])
        } else {
            capture = CaptureSelection([.auto])
        }
        let pollInterval =
            try parsed.parsed("poll-interval", as: "milliseconds (250, 250ms) or seconds (0.25s), 10 ms to 10 s") {
                CaptureSources.pollInterval($0)
            } ?? 0.25
        var newProcessPoll: Double? = 0.025
        if parsed.value("new-process-poll") != "off" {
            newProcessPoll =
                try parsed.parsed("new-process-poll", as: "off, or milliseconds (10, 10ms) or seconds, 1 ms to 1 s") {
                    CaptureSources.pollInterval($0, within: 0.001...1)
                } ?? 0.025
        } else {
            newProcessPoll = nil
        }
        let onMirror = try parsed.parsed("on-mirror", as: "protect or allow") { UnknownPolicy(rawValue: $0) }
        if onMirror != nil, !capture.words.contains(.auto), !capture.words.contains(.mirror) {
            throw CLIError(.usage, "--on-mirror is only used with --capture-source auto or mirror")
        }
        let recorders = try CaptureSources.recorderRules(files: parsed.all("recorders"), environment: environment)
        var control: ServeConfiguration?
        if let address = parsed.value("control") {
            var configuration = ServeConfiguration()
            try configuration.set("listen", address, source: "--control")
            if !ServeCommand.isLoopback(configuration.host) && !parsed.has("control-public") {
                throw CLIError(
                    .usage,
                    "--control \(address) is not a loopback address: the control API would be reachable from "
                        + "the network over plain HTTP; listen on 127.0.0.1, or add --control-public to mean it")
            }
            // No default: a directory made here would hold no tokens, so no client could call in.
            guard let data = parsed.value("data") else {
                throw CLIError(
                    .usage,
                    "--control needs --data DIR, the gateway data directory holding its API tokens (scope control)")
            }
            try configuration.set("data", data, source: "--data")
            if let store = parsed.value("store") { try configuration.set("store", store, source: "--store") }
            control = configuration
        } else if parsed.has("data") || parsed.has("store") {
            throw CLIError(.usage, "--\(parsed.has("data") ? "data" : "store") is only used with --control")
        } else if parsed.has("control-public") {
            throw CLIError(.usage, "--control-public is only used with --control")
        }
        return Request(
            player: player, scheduled: scheduled, policy: policy, status: status, capture: capture,
            captureExplicit: captureExplicit, pollInterval: pollInterval, newProcessPoll: newProcessPoll,
            recorders: recorders, allowMirror: onMirror == .allow,
            videoNotice: videoNotice, control: control)
    }

    /// A media time or duration for `--start`/`--length`: from 0 to 1e9 s, the bound the REST seek and the
    /// `--simulate-*` specs use too, so sums of media times stay finite and exact enough to convert.
    private static func seconds(_ text: String) -> Double? {
        guard let value = Double(text), value.isFinite, (0...SimulatedSchedule.maximumSeconds).contains(value)
        else { return nil }
        return value
    }

    /// The exit code for each kind of player failure; the table is in the README.
    static func exitCode(for kind: PlayerError.Kind) -> ExitCode {
        switch kind {
        case .inputMissing: .inputMissing
        case .inputEmpty: .inputEmpty
        case .inputNotMedia: .inputNotMedia
        case .inputUnrecognised: .inputUnrecognised
        case .inputTruncated: .inputTruncated
        case .inputNoStreams: .inputNoStreams
        case .inputUnsupported: .inputUnsupported
        case .inputPictureTooLarge: .inputPictureTooLarge
        case .maskImage: .badValue
        case .output: .outputFailed
        case .outputIsInput: .usage
        case .device, .other: .failure
        }
    }
}

/// How playback is shown.
enum StatusMode: String {
    /// A line updated in place on a terminal.
    case line
    /// JSON lines on standard output.
    case json
    /// Nothing but errors.
    case none
    /// A plain line per change on standard error (the default when standard error is not a terminal).
    case log
}
