import Foundation
import ProcessTestSupport
import Testing

/// The detection acceptance tests: the player in a real window on a private X server recorded by a real
/// `ffmpeg -f x11grab`, and the player on a private PulseAudio recorded by a real `parec`.
///
/// The bound is generous against the goal (300 ms with the 250 ms poll) because the machine running the
/// tests is shared and loaded; what each run measured is printed, and docs/PERFORMANCE.md records it.
@Suite(.hangGuard) struct CaptureAcceptanceTests {
    /// Frames and samples later than this after the recorder starts must be protected.
    static let bound = 1.0

    @Test func aScreenRecordingUnderXvfbShowsOnlyTheMask() throws {
        let directory = try TemporaryDirectory()
        let display = try VirtualDisplay()
        // Only this test's ffmpeg counts: the one writing this recording.
        let recording = directory.path("recording.mkv")
        let rule = try recorderRule("screen", "ffmpeg", whenArgument: recording)
        let player = try BackgroundPlayer(
            [
                fixture("clip.mp4"), "--video-out", "window", "--loop", "3",
                // The process scanner alone: under `auto` X11 itself makes the state unknown (protected).
                "--capture-source", "process",
                "--recorders", try recorderList(adding: [rule], in: directory),
            ],
            environment: ["DISPLAY": display.name, "SDL_AUDIODRIVER": "dummy"], in: directory)

        // Before any recorder: the clip is on screen.
        #expect(ProcessTestSupport.eventually(timeout: 30) { !player.events("start").isEmpty }, "\(player.errors)")
        let started = Date()
        var visible = 0.0
        _ = ProcessTestSupport.eventually(timeout: 20) {
            visible = (try? display.screenshot(in: directory).brightShare()) ?? 0
            return visible > 0.2
        }
        #expect(visible > 0.2, "the clip is not visible in the window before recording: \(visible)")
        #expect(player.events("state").isEmpty, "nothing should have been detected yet: \(player.events("state"))")

        // After 2 s, a real screen recording of the display for 4 s.
        let wait = 2 - Date().timeIntervalSince(started)
        if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
        let recorderStart = Date().timeIntervalSince1970
        let recorder = try SpawnedProcess(
            [
                "/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "x11grab", "-draw_mouse", "0",
                "-framerate", "30", "-video_size", "\(display.width)x\(display.height)", "-t", "4", "-i",
                display.name, "-copyts", "-vf", "format=gray", "-c:v", "ffv1", recording,
            ], errors: directory.path("ffmpeg.log"))
        let recorderStatus = recorder.wait(timeout: 30)
        recorder.end()
        #expect(recorderStatus == 0, "ffmpeg x11grab failed: \(String(describing: recorderStatus))")

        // The recorder is gone: the player unmasks; then `q` pressed in the window ends it.
        #expect(
            ProcessTestSupport.eventually(timeout: 10) {
                player.events("state").contains { $0["state"] as? String == "clear" }
            })
        try pressKey("q", inWindowNamed: "guard-play: clip.mp4", on: display, scratch: directory)
        #expect(player.process.wait(timeout: 20) == 0, "\(player.errors)")
        #expect(player.events("end").first?["reason"] as? String == "stopped")

        // Every frame recorded later than the bound after the recorder started shows the mask.
        let frames = try decodeRecording(recording)
        let checked = frames.filter { $0.time >= recorderStart + Self.bound }
        #expect(checked.count >= 60, "too few frames after the bound: \(checked.count) of \(frames.count)")
        for frame in checked where frame.brightShare() > 0.01 {
            Issue.record(
                "frame at +\(milliseconds(frame.time - recorderStart)) ms shows the clip (\(frame.brightShare()))")
        }
        // What was measured, for docs/PERFORMANCE.md.
        let events = player.events
        let detected = events.first { $0["event"] as? String == "state" && $0["state"] as? String == "capturing" }
        let since = detected?["since"] as? Double
        let masked = protectionOn("video", in: events, after: recorderStart)
        let lastClear = frames.last { $0.brightShare() > 0.01 && $0.time < recorderStart + Self.bound }
        let firstMaskedInRecording = frames.first { $0.time > (lastClear?.time ?? 0) && $0.brightShare() <= 0.01 }
        #expect(since != nil && masked != nil, "no detection or no masked frame: \(events)")
        print(
            "capture latency (x11grab): detected +\(since.map { milliseconds($0 - recorderStart) } ?? -1) ms, "
                + "first masked frame shown +\(masked.map { milliseconds($0 - recorderStart) } ?? -1) ms, "
                + "first recorded frame +\(frames.first.map { milliseconds($0.time - recorderStart) } ?? -1) ms, "
                + "masked in the recording from +"
                + "\(firstMaskedInRecording.map { milliseconds($0.time - recorderStart) } ?? -1) ms")
    }

    @Test func anAudioRecordingOfTheSinkMonitorIsSilent() throws {
        let directory = try TemporaryDirectory()
        let sound = try PrivateSoundServer()
        // A witness recording from before the player starts, by a recorder the player is told to ignore
        // (`pacat`): it proves the player was audible before the real recorder started, and that it was
        // muted for everyone while that recorder ran.
        let witnessPath = directory.path("witness.raw")
        let witness = try sound.record(with: ["/usr/bin/pacat", "--record"], to: witnessPath)
        defer { witness.end() }
        // Only this test's parec counts: the one writing this recording.
        let recordingPath = directory.path("recording.raw")
        let rule = try recorderRule("audio", "parec", whenArgument: recordingPath)
        let player = try BackgroundPlayer(
            [
                fixture("song.m4a"), "--video-out", "null", "--loop", "3", "--capture-source", "process",
                "--recorders", try recorderList(adding: [rule], in: directory),
            ],
            environment: sound.environment.merging(["SDL_AUDIODRIVER": "pulseaudio"]) { $1 }, in: directory)

        // Audible: the witness hears the song for a second before any recorder starts.
        let audible = ProcessTestSupport.eventually(timeout: 30) {
            guard let heard = try? RawRecording(witnessPath), heard.duration > 1 else { return false }
            return heard.rms(from: heard.duration - 1, to: heard.duration) > 500
        }
        #expect(audible, "the player was not audible before recording: \(player.errors)")
        #expect(player.events("start").first?["output"] as? String == "device", "\(player.events("start"))")

        // A real recording of the sink's monitor for 3 s.
        let recorderStart = Date().timeIntervalSince1970
        let witnessBefore = try RawRecording(witnessPath).duration
        let recorder = try sound.record(with: ["/usr/bin/parec"], to: recordingPath)
        usleep(3_000_000)
        recorder.end()
        let witnessDuring = try RawRecording(witnessPath).duration
        // Heard again once the recorder is gone.
        usleep(2_000_000)
        player.process.end()
        witness.end()

        let recording = try RawRecording(recordingPath)
        #expect(recording.duration >= Self.bound + 1.5, "recording too short: \(recording.duration) s")
        // Sample k of the recording was recorded no earlier than k / rate after the recorder started.
        let peak = recording.peak(from: Self.bound)
        #expect(peak <= 2, "the recording is not silent from +\(Self.bound) s: peak \(peak)")
        let heard = try RawRecording(witnessPath)
        #expect(
            heard.peak(from: witnessBefore + Self.bound, to: witnessDuring - 0.1) <= 2,
            "the player was audible while the recorder ran")
        #expect(heard.rms(from: heard.duration - 1, to: heard.duration) > 500, "not audible again afterwards")

        let events = player.events
        let detected = events.first { $0["event"] as? String == "state" && $0["state"] as? String == "capturing" }
        #expect(detected?["app"] as? String == "parec")
        let since = detected?["since"] as? Double
        let muted = protectionOn("audio", in: events, after: recorderStart)
        #expect(since != nil && muted != nil, "no detection or no muted sample: \(events)")
        var firstSilent = 0.0
        for window in stride(from: 0.0, to: recording.duration, by: 0.01) where recording.peak(from: window) <= 2 {
            firstSilent = window
            break
        }
        print(
            "capture latency (parec): detected +\(since.map { milliseconds($0 - recorderStart) } ?? -1) ms, "
                + "first muted sample to the device +\(muted.map { milliseconds($0 - recorderStart) } ?? -1) ms, "
                + "recording silent from its own +\(milliseconds(firstSilent)) ms")
    }
}

/// Focuses the window named `name` on `display` and presses `key` there (XTEST, as a real keyboard).
func pressKey(
    _ key: String, inWindowNamed name: String, on display: VirtualDisplay, scratch: TemporaryDirectory
) throws {
    let environment = ["DISPLAY": display.name]
    let listing = scratch.path("windows-\(UUID().uuidString.prefix(8))")
    let search = try SpawnedProcess(
        ["/usr/bin/xdotool", "search", "--name", name], environment: environment, output: listing)
    search.wait(timeout: 10)
    search.end()
    guard let window = try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n").first else {
        throw TestFailure("no window named '\(name)' on \(display.name)")
    }
    let focus = try SpawnedProcess(
        ["/usr/bin/xdotool", "windowfocus", "--sync", String(window)], environment: environment)
    focus.wait(timeout: 10)
    focus.end()
    let press = try SpawnedProcess(["/usr/bin/xdotool", "key", key], environment: environment)
    guard press.wait(timeout: 10) == 0 else {
        press.end()
        throw TestFailure("xdotool key \(key) failed")
    }
    press.end()
}
