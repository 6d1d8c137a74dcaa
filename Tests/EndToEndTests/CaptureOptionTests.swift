import Foundation
import ProcessTestSupport
import Testing

/// The capture-source options end to end: which detectors run, what they tell the user, the audit trail,
/// and the fail-closed path through the whole player.
@Suite(.hangGuard) struct CaptureOptionTests {
    @Test func aDetectorThatDiesMakesThePlayerProtect() throws {
        // A stand-in pw-dump that prints a recorded idle graph, lives a second and dies.
        let directory = try TemporaryDirectory()
        let fixtures = repositoryRoot.appendingPathComponent("Tests/CaptureDetectorsTests/Fixtures").path
        try writeExecutable(
            "#!/bin/sh\ncat '\(fixtures)/idle-playback.json'\nsleep 1\nexit 3\n", to: directory.path("pw-dump"))
        let out = directory.path("out.wav")
        let path = directory.url.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try guardPlay(
            [
                fixture("song.m4a"), "--capture-source", "pipewire", "--realtime", "--output", out, "--length", "4",
                "--status", "json",
            ], environment: headlessEnvironment.merging(["PATH": path]) { $1 }, timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        let events = try jsonEvents(result.stdout)
        let start = try #require(events.first { $0["event"] as? String == "start" })
        #expect(start["state"] as? String == "clear" && start["source"] as? String == "pipewire")
        let failed = try #require(events.first { $0["event"] as? String == "state" }, "\(events)")
        #expect(failed["state"] as? String == "unknown" && failed["protecting"] as? Bool == true)
        #expect((failed["reason"] as? String)?.contains("PipeWire watcher stopped") == true)
        // The audio is muted from that moment to the end, and was not before.
        let time = try #require(failed["time"] as? Double)
        let audio = try decodeAudio(out)
        let rate = Double(audio.sampleRate)
        let after = audio.samples[(Int((time + 0.01) * rate) * audio.channels)...]
        #expect(!after.isEmpty && after.allSatisfy { $0 == 0 }, "sound after the watcher died at \(time) s")
        #expect(audio.samples[0..<(Int(max(0, time - 0.05) * rate) * audio.channels)].contains { $0 != 0 })
    }

    @Test(arguments: [
        (["--capture-source", "process,bogus"], Int32(3), "invalid value 'bogus' in --capture-source"),
        (["--capture-source", "none,process"], 2, "'none' means no detector"),
        (["--capture-source", "simulate,pipewire"], 2, "'simulate' means no detector"),
        (["--poll-interval", "5"], 3, "invalid value '5' for --poll-interval"),
        (["--poll-interval", "fast"], 3, "invalid value 'fast' for --poll-interval"),
        (["--recorders", "/nonexistent/recorders.conf"], 3, "cannot read '/nonexistent/recorders.conf'"),
        (["--video-out", "tv"], 3, "invalid value 'tv' for --video-out"),
        (["--video-out", "window", "--output", "null"], 2, "--video-out window needs the device"),
    ])
    func badCaptureOptions(_ arguments: [String], _ status: Int32, _ message: String) throws {
        let result = try guardPlay([fixture("song.m4a")] + arguments, environment: headlessEnvironment)
        #expect(result.status == status)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// The units `--poll-interval` takes, checked at the bounds (10 ms to 10 s): a unit read wrongly (ms as
    /// s, or s as ms) falls outside them.
    @Test(arguments: [
        ("250", true), ("250ms", true), ("0.25s", true), ("10ms", true), ("10", true), ("0.01s", true),
        ("10s", true), ("10000", true), ("9ms", false), ("9", false), ("0.009s", false), ("11s", false),
        ("10001ms", false),
    ])
    func pollIntervalUnits(_ value: String, _ accepted: Bool) throws {
        let result = try guardPlay(
            [
                fixture("song.m4a"), "--capture-source", "process", "--poll-interval", value, "--length", "0.2",
                "--output", "null", "--status", "none",
            ], environment: headlessEnvironment)
        #expect(result.status == (accepted ? 0 : 3), "\(result.stderr)")
        if !accepted { #expect(result.stderr.contains("invalid value '\(value)' for --poll-interval")) }
    }

    /// `--new-process-poll`: `off`, or 1 ms to 1 s in the units `--poll-interval` takes.
    @Test(arguments: [
        ("10", true), ("5ms", true), ("off", true), ("1ms", true), ("1s", true), ("0.5ms", false), ("2s", false),
        ("never", false),
    ])
    func newProcessPollValues(_ value: String, _ accepted: Bool) throws {
        let result = try guardPlay(
            [
                fixture("song.m4a"), "--capture-source", "process", "--new-process-poll", value, "--length", "0.2",
                "--output", "null", "--status", "none",
            ], environment: headlessEnvironment)
        #expect(result.status == (accepted ? 0 : 3), "\(result.stderr)")
        if !accepted { #expect(result.stderr.contains("invalid value '\(value)' for --new-process-poll")) }
    }

    @Test func theUsersRecorderListIsReadAndCheckedLineByLine() throws {
        let config = try TemporaryDirectory()
        try FileManager.default.createDirectory(
            at: config.url.appendingPathComponent("guard-play"), withIntermediateDirectories: true)
        try "screen my-grabber\nrecord obs\n".write(
            toFile: config.path("guard-play/recorders.conf"), atomically: true, encoding: .utf8)
        let result = try guardPlay(
            [fixture("song.m4a"), "--length", "0.2"],
            environment: headlessEnvironment.merging(["XDG_CONFIG_HOME": config.url.path]) { $1 })
        #expect(result.status == 3)
        #expect(result.stderr.contains("guard-play/recorders.conf', line 2: unknown kind 'record'"), "\(result.stderr)")
    }

    @Test func withoutADisplayVideoGoesNowhereWithANotice() throws {
        let result = try guardPlay(
            [fixture("clip.mp4"), "--capture-source", "none", "--length", "0.3", "--status", "json"],
            environment: headlessEnvironment)
        #expect(result.status == 0, "\(result.stderr)")
        let events = try jsonEvents(result.stdout)
        #expect(events.contains { ($0["message"] as? String)?.hasPrefix("no display") == true }, "\(events)")
        #expect(events.first { $0["event"] as? String == "start" }?["protecting"] as? Bool == false)
    }

    @Test func aWindowThatCannotOpenFailsOnlyWhenAskedFor() throws {
        // A display nobody serves: SDL must not fall back to an invisible offscreen "window".
        let directory = try TemporaryDirectory()
        let nowhere = headlessEnvironment.merging(["DISPLAY": unservedDisplay(in: directory)]) { $1 }
        let arguments = [fixture("clip.mp4"), "--capture-source", "none", "--length", "0.3"]
        let required = try guardPlay(arguments + ["--video-out", "window"], environment: nowhere)
        #expect(required.status == 1)
        #expect(required.stderr.contains("cannot open a window"), "\(required.stderr)")
        let automatic = try guardPlay(arguments, environment: nowhere)
        #expect(automatic.status == 0, "\(automatic.stderr)")
        #expect(automatic.stderr.contains("warning: cannot open a window"), "\(automatic.stderr)")
        #expect(automatic.stderr.contains("playing without a window"))
    }

    @Test func x11MakesTheStateUnknownAndThePolicyDecides() throws {
        // A display name is enough: the session source reads the environment, and no window is opened.
        let directory = try TemporaryDirectory()
        let x11 = headlessEnvironment.merging(["DISPLAY": unservedDisplay(in: directory), "XDG_SESSION_TYPE": "x11"]) {
            $1
        }
        for (policy, protecting) in [("protect", true), ("allow", false)] {
            let result = try guardPlay(
                [
                    fixture("song.m4a"), "--capture-source", "session", "--video-out", "null", "--on-unknown", policy,
                    "--length", "0.3", "--status", "json",
                ], environment: x11)
            #expect(result.status == 0, "\(result.stderr)")
            let events = try jsonEvents(result.stdout)
            let start = try #require(events.first { $0["event"] as? String == "start" })
            #expect(start["state"] as? String == "unknown" && start["source"] as? String == "session")
            #expect(start["protecting"] as? Bool == protecting)
            #expect(events.contains { ($0["message"] as? String)?.hasPrefix("X11 session") == true } == protecting)
        }
    }

    @Test func remoteWithoutAReportIsUnknown() throws {
        let result = try guardPlay(
            [fixture("song.m4a"), "--capture-source", "remote", "--length", "0.3", "--status", "json"],
            environment: headlessEnvironment)
        #expect(result.status == 0, "\(result.stderr)")
        let events = try jsonEvents(result.stdout)
        let start = try #require(events.first { $0["event"] as? String == "start" })
        #expect(start["state"] as? String == "unknown" && start["source"] as? String == "remote:control")
        #expect(start["protecting"] as? Bool == true)
        #expect(events.contains { ($0["message"] as? String)?.contains("no remote client can report") == true })
    }

    @Test func aScreenshotSavedWhilePlayingGoesToTheAuditTrailOnly() throws {
        let directory = try TemporaryDirectory()
        let home = try TemporaryDirectory()
        let shots = home.url.appendingPathComponent("Pictures/Screenshots")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let player = try BackgroundPlayer(
            [
                fixture("song.m4a"), "--length", "3", "--capture-source", "process",
                "--recorders", try recorderList(in: directory),
            ],
            environment: headlessEnvironment.merging(["HOME": home.url.path, "XDG_CONFIG_HOME": home.path(".config")]) {
                $1
            }, in: directory)
        #expect(ProcessTestSupport.eventually(timeout: 30) { !player.events("start").isEmpty }, "\(player.errors)")
        let picture = shots.appendingPathComponent("Screenshot from now.png")
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: picture)
        #expect(player.process.wait(timeout: 30) == 0, "\(player.errors)")
        let events = player.events
        let sighting = events.first { $0["event"] as? String == "screenshot" }
        #expect(sighting?["path"] as? String == picture.path, "\(events)")
        #expect(sighting?["protecting"] as? Bool == false)
        #expect(!events.contains { $0["event"] as? String == "state" }, "a screenshot must not change the state")
    }
}
