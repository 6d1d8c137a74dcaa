import CaptureMonitor
import FoundationEssentials
import SystemSupport

extension PlayerEvent {
    /// The event as one line of JSON (no trailing newline), as `--status json` prints it and an event
    /// stream can send it. `time` is media seconds; `wall` is Unix time when the line was made.
    public var jsonLine: String {
        var fields: [(String, JSON)]
        switch self {
        case .started(let status):
            fields = [("event", .string("start"))] + status.jsonFields
        case .capture(let event, let protecting):
            fields = [
                ("event", .string("state")), ("state", .string(event.state.rawValue)),
                ("source", .string(event.source)), ("reason", .string(event.reason)),
                ("pid", event.pid.map { .number(Double($0)) } ?? .null),
                ("app", event.app.map(JSON.string) ?? .null),
                ("confidence", .number(event.confidence)), ("time", .number(event.since.media)),
                ("since", .number((unixTime(ofMonotonic: event.since.wall) * 1000).rounded() / 1000)),
                ("protecting", .bool(protecting)),
            ]
        case .protection(let change):
            fields = [
                ("event", .string("protection")), ("output", .string(change.output.rawValue)),
                ("protecting", .bool(change.protecting)), ("time", .number(change.media)),
                ("at", .number((change.wall * 1000).rounded() / 1000)),
            ]
        case .screenshotSaved(let path, let protecting):
            fields = [("event", .string("screenshot")), ("path", .string(path)), ("protecting", .bool(protecting))]
        case .paused(let paused, let status):
            fields = [("event", .string(paused ? "pause" : "resume")), ("time", .number(status.position))]
        case .muted(let muted, let status):
            fields = [("event", .string(muted ? "mute" : "unmute")), ("time", .number(status.position))]
        case .seeked(let status):
            fields = [("event", .string("seek")), ("time", .number(status.position))]
        case .warning(let message):
            fields = [("event", .string("warning")), ("message", .string(message))]
        case .notice(let message):
            fields = [("event", .string("notice")), ("message", .string(message))]
        case .finished(let summary):
            fields = [
                ("event", .string("end")), ("reason", .string(summary.reason)), ("time", .number(summary.position)),
                ("state_changes", .number(Double(summary.stateChanges))),
                ("audio_frames", .number(Double(summary.audioFrames))),
                ("audio_frames_protected", .number(Double(summary.audioFramesProtected))),
                ("video_frames", .number(Double(summary.videoFrames))),
                ("video_frames_masked", .number(Double(summary.videoFramesMasked))),
                ("video_frames_dropped", .number(Double(summary.videoFramesDropped))),
                ("damaged_packets", .number(Double(summary.damagedPackets))),
                ("error", summary.error.map(JSON.string) ?? .null),
            ]
            if let flicker = summary.flicker {
                fields += [
                    ("flicker_refresh_reported_hz", .number(flicker.reportedRate)),
                    ("flicker_refresh_measured_hz", flicker.measuredRate.map(JSON.number) ?? .null),
                    ("flicker_presents", .number(Double(flicker.presents))),
                    ("flicker_missed_vsyncs", .number(Double(flicker.missedVsyncs))),
                ]
            }
        }
        fields.append(("wall", .number((Date().timeIntervalSince1970 * 1000).rounded() / 1000)))
        // Numbers to the microsecond: media seconds and rates, never float noise.
        let rounded = fields.map { name, value in
            if case .number(let number) = value {
                (name, JSON.number((number * 1_000_000).rounded() / 1_000_000))
            } else {
                (name, value)
            }
        }
        return JSON.object(rounded).text(sortingKeys: false, pretty: false)
    }
}

/// Unix seconds of an instant on the monitor's monotonic clock.
func unixTime(ofMonotonic seconds: Double) -> Double {
    Date().timeIntervalSince1970 - (MonotonicClock.seconds() - seconds)
}

extension PlayerStatus {
    var jsonFields: [(String, JSON)] {
        [
            ("file", .string(path)), ("duration", duration.map(JSON.number) ?? .null), ("time", .number(position)),
            ("state", .string(capture.state.rawValue)), ("source", .string(capture.source)),
            ("protecting", .bool(isProtecting)), ("paused", .bool(isPaused)), ("muted", .bool(isMuted)),
            ("mask", .string(mask)), ("output", .string(output)), ("audio", .bool(hasAudio)),
            ("video", .bool(hasVideo)),
        ]
    }

    /// The one-line status for a terminal: position/duration, capture state with its source, flags.
    public var line: String {
        let total = end.map { String(cFormat: "%.1f", $0) } ?? "?"
        var flags: [String] = []
        if isPaused { flags.append("paused") }
        if isMuted { flags.append("muted by user") }
        if isProtecting {
            if hasAudio { flags.append("audio muted") }
            if hasVideo { flags.append("video masked (\(mask))") }
        }
        // Spelt as everywhere else (the log lines, JSON, the REST API): lower case.
        return String(cFormat: "%6.1f/", position) + total + " s  " + "\(capture.state.rawValue) (\(capture.source))"
            + (flags.isEmpty ? "" : "  " + flags.joined(separator: ", "))
    }
}
