import Foundation
import ProcessTestSupport
import Testing

/// Realtime paths: the emulated device writing a file, and the keys on a terminal.
@Suite(.hangGuard) struct RealtimeTests {
    @Test func realtimeFileOutputIsGatedAndMaskedAtTheSinks() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.mkv")
        let result = try guardPlay(
            [fixture("clip.mp4"), "--realtime", "--simulate-recording=1-2", "--length", "3", "--output", out],
            environment: ["SDL_AUDIODRIVER": "none-such-driver"])
        #expect(result.status == 0, "\(result.stderr)")
        // Audio leaves through the emulated device's callback, gated there: muted exactly over 1-2 s.
        let audio = try decodeAudio(out)
        let reference = try decodeAudio(fixture("clip.mp4"))
        #expect(audio.frameCount == 3 * 48_000)
        let cut = DecodedAudio(
            sampleRate: reference.sampleRate, channels: reference.channels,
            samples: Array(reference.samples[0..<(3 * 48_000 * 2)]), start: reference.start)
        #expect(checkMuting(output: audio, reference: cut, muted: Intervals(ranges: [(1, 2)])) == nil)
        // Video is masked at presentation; a frame that comes too late is dropped (the right thing on a
        // loaded machine), so frames are matched by time, and every frame that is there is checked.
        let video = try decodeVideo(out)
        let originals = try decodeVideo(fixture("clip.mp4"))
        var shown = (masked: 0, clear: 0)
        for frame in video {
            guard let original = originals.first(where: { abs($0.time - frame.time) < 0.002 }) else {
                Issue.record("no source frame at \(frame.time) s")
                continue
            }
            let masked = Intervals(ranges: [(1, 2)]).overlaps(original.time, original.time + 1.0 / 30)
            #expect(masked ? isBlack(frame, original) : frame.planes == original.planes, "frame at \(frame.time) s")
            if masked { shown.masked += 1 } else { shown.clear += 1 }
        }
        #expect(shown.masked > 0 && shown.clear > 0, "frames inside and outside 1-2 s: \(shown)")
    }

    @Test func keysOnATerminalToggleRecordingAndQuit() throws {
        // `script` gives the player a terminal and logs what it prints; the keys are typed once the log
        // shows the `start` line (the terminal is in raw mode before it is printed): `r` turns a
        // simulated recording on, and once that shows, `q` quits.
        let directory = try TemporaryDirectory()
        let log = directory.path("typescript")
        // Only the simulated source: a detector would see recorders that other tests run meanwhile.
        // Each wait gives up after 30 s, so a player that never shows the line fails instead of hanging.
        let command = "\(guardPlayBinary) \(fixture("song.m4a")) --status json --capture-source simulate"
        let keys = """
            i=0; until grep -q '"event":"start"' '\(log)' 2>/dev/null || [ $i -gt 600 ]; do sleep 0.05; i=$((i+1)); done; \
            printf r; i=0; \
            until grep -q '"source":"simulated-key"' '\(log)' || [ $i -gt 600 ]; do sleep 0.05; i=$((i+1)); done; printf q
            """
        let result = try run(
            "/bin/sh", ["-c", "(\(keys)) | script -qfec '\(command)' '\(log)'"],
            environment: ["SDL_AUDIODRIVER": "none-such-driver"], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)")
        let events = try jsonEvents(
            result.stdout.replacingOccurrences(of: "\r", with: "").split(separator: "\n")
                .filter { $0.hasPrefix("{") }.joined(separator: "\n"))
        let states = events.filter { $0["event"] as? String == "state" }
        #expect(states.first?["state"] as? String == "capturing")
        #expect(states.first?["source"] as? String == "simulated-key")
        #expect(events.last?["event"] as? String == "end")
        #expect(events.last?["reason"] as? String == "stopped")
    }

    /// The keys in the video window, pressed as a keyboard would (XTEST) on a private X server: space
    /// pauses and resumes, `m` mutes and unmutes, `q` quits.
    @Test func keysInTheVideoWindowPauseMuteAndQuit() throws {
        let directory = try TemporaryDirectory()
        let display = try VirtualDisplay()
        let player = try BackgroundPlayer(
            [fixture("clip.mp4"), "--video-out", "window", "--loop", "0", "--capture-source", "none"],
            environment: ["DISPLAY": display.name, "WAYLAND_DISPLAY": "", "SDL_AUDIODRIVER": "dummy"], in: directory)
        #expect(ProcessTestSupport.eventually(timeout: 30) { !player.events("start").isEmpty }, "\(player.errors)")
        let window = "guard-play: clip.mp4"
        for (key, event) in [("space", "pause"), ("space", "resume"), ("m", "mute"), ("m", "unmute")] {
            let before = player.events(event).count
            try pressKey(key, inWindowNamed: window, on: display, scratch: directory)
            #expect(
                ProcessTestSupport.eventually(timeout: 20) { player.events(event).count == before + 1 },
                "\(key) did not \(event): \(player.events.compactMap { $0["event"] as? String })")
        }
        try pressKey("q", inWindowNamed: window, on: display, scratch: directory)
        #expect(player.process.wait(timeout: 20) == 0, "\(player.errors)")
        #expect(player.events("end").first?["reason"] as? String == "stopped")
        // Paused, then playing again; muted by the user, then not.
        let order = player.events.compactMap { $0["event"] as? String }.filter {
            ["pause", "resume", "mute", "unmute"].contains($0)
        }
        #expect(order == ["pause", "resume", "mute", "unmute"])
    }

    @Test func anInterruptLeavesNoOutputAndExits130() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.mkv")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: guardPlayBinary)
        process.arguments = [fixture("clip.mp4"), "--realtime", "--output", out, "--status", "none"]
        process.environment = ["SDL_AUDIODRIVER": "none-such-driver"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Interrupted while the output is being written: once its partial file exists.
        let writing = ProcessTestSupport.eventually(timeout: 60) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.url.path)) ?? []
            return names.contains { $0.hasPrefix(".out.mkv.partial-") }
        }
        #expect(writing, "no partial output appeared")
        #expect(process.isRunning, "it ended before the interrupt")
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 130)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }
}
