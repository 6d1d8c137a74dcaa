import CaptureDetectors
import Foundation
import ProcessTestSupport
import Testing

/// The mirrored-display source end to end, with the real `xrandr`: a real Xorg with the dummy driver's
/// outputs cloned, extended and switched off under the playing player; a private Xvfb (one output) stays
/// clear; an X display nobody serves is unknown and protects.
@Suite(.hangGuard) struct MirrorAcceptanceTests {
    /// The player's poll interval.
    static let interval = 0.25
    /// Protection must follow the layout within one interval and this margin (a shared, loaded machine).
    static let margin = 0.35

    /// A private Xorg with `xserver-xorg-video-dummy`: sixteen outputs, DUMMY0 lit at 1920x1080; its log
    /// and config in `directory`.
    static func dummyXorg(in directory: TemporaryDirectory) throws -> VirtualDisplay {
        let config = """
            Section "Device"
                Identifier "dummy"
                Driver "dummy"
                VideoRam 256000
            EndSection
            Section "Monitor"
                Identifier "monitor"
                HorizSync 5.0-1000.0
                VertRefresh 5.0-200.0
            EndSection
            Section "Screen"
                Identifier "screen"
                Device "dummy"
                Monitor "monitor"
                DefaultDepth 24
                SubSection "Display"
                    Depth 24
                    Virtual 3840 2160
                EndSubSection
            EndSection

            """
        try config.write(toFile: directory.path("xorg.conf"), atomically: true, encoding: .utf8)
        return try VirtualDisplay(
            width: 1920, height: 1080,
            server: [
                "/usr/bin/Xorg", "-config", directory.path("xorg.conf"), "-logfile", directory.path("xorg.log"),
                "-noreset", "-nolisten", "tcp",
            ])
    }

    /// Runs `xrandr ARGUMENTS` on `display`, which must succeed.
    static func xrandr(_ arguments: [String], on display: VirtualDisplay) throws {
        let tool = try SpawnedProcess(["/usr/bin/xrandr"] + arguments, environment: ["DISPLAY": display.name])
        defer { tool.end() }
        guard tool.wait(timeout: 20) == 0 else { throw TestFailure("xrandr \(arguments) failed on \(display.name)") }
    }

    @Test func aClonedOutputProtectsAndAnExtendedOneDoesNot() throws {
        let directory = try TemporaryDirectory()
        let display = try Self.dummyXorg(in: directory)
        try Self.xrandr(["--output", "DUMMY0", "--mode", "1920x1080"], on: display)
        try Self.xrandr(["--addmode", "DUMMY1", "1920x1080"], on: display)
        try Self.xrandr(["--output", "DUMMY1", "--mode", "1920x1080", "--right-of", "DUMMY0"], on: display)

        // Extended: the player starts clear and stays so.
        let player = try BackgroundPlayer(
            [
                fixture("clip.mp4"), "--video-out", "window", "--loop", "0", "--capture-source", "mirror",
                "--poll-interval", "\(milliseconds(Self.interval))ms",
            ],
            environment: ["DISPLAY": display.name, "SDL_AUDIODRIVER": "dummy"], in: directory)
        defer { player.process.end() }
        #expect(ProcessTestSupport.eventually(timeout: 30) { !player.events("start").isEmpty }, "\(player.errors)")
        let start = try #require(player.events("start").first)
        #expect(start["state"] as? String == "clear" && start["protecting"] as? Bool == false, "\(start)")

        // Cloned: protected within one interval, naming the output.
        let cloned = Date().timeIntervalSince1970
        try Self.xrandr(["--output", "DUMMY1", "--same-as", "DUMMY0"], on: display)
        #expect(
            ProcessTestSupport.eventually(timeout: 10) {
                protectionOn("video", in: player.events, after: cloned) != nil
            },
            "\(player.events)")
        let masked = try #require(protectionOn("video", in: player.events, after: cloned))
        let capturing = player.events("state").first { $0["state"] as? String == "capturing" }
        #expect(capturing?["source"] as? String == "mirror" && capturing?["app"] as? String == "DUMMY1")
        #expect(
            (capturing?["reason"] as? String)?.contains("DUMMY1 (1920x1080+0+0) shows the same picture as DUMMY0")
                == true, "\(capturing ?? [:])")
        #expect(masked - cloned <= Self.interval + Self.margin, "masked +\(milliseconds(masked - cloned)) ms")

        // Switched off: unprotected within one interval.
        let off = Date().timeIntervalSince1970
        try Self.xrandr(["--output", "DUMMY1", "--off"], on: display)
        #expect(
            ProcessTestSupport.eventually(timeout: 10) { protectionOff("video", in: player.events, after: off) != nil })
        let unmasked = try #require(protectionOff("video", in: player.events, after: off))
        #expect(unmasked - off <= Self.interval + Self.margin, "unmasked +\(milliseconds(unmasked - off)) ms")
        #expect(player.process.isRunning, "\(player.errors)")
        print(
            "mirror latency (Xorg dummy, --poll-interval \(milliseconds(Self.interval)) ms): masked "
                + "+\(milliseconds(masked - cloned)) ms after the clone, unmasked +\(milliseconds(unmasked - off)) ms "
                + "after the output went off")
    }

    @Test func autoWatchesForMirrorsOnX11() throws {
        let directory = try TemporaryDirectory()
        let display = try Self.dummyXorg(in: directory)
        try Self.xrandr(["--output", "DUMMY0", "--mode", "1920x1080"], on: display)
        try Self.xrandr(["--addmode", "DUMMY1", "1920x1080"], on: display)
        try Self.xrandr(["--output", "DUMMY1", "--mode", "1920x1080", "--same-as", "DUMMY0"], on: display)
        for (policy, protecting) in [("protect", true), ("allow", false)] {
            // In a PID namespace of its own, so `auto`'s process scan and remote-desktop source see no
            // recorder or VNC server that another test runs at the same time.
            let result = try run(
                "/usr/bin/unshare",
                [
                    "--pid", "--fork", "--mount-proc", guardPlayBinary, fixture("song.m4a"), "--video-out", "null",
                    "--on-mirror", policy, "--length", "0.3", "--status", "json",
                ], environment: headlessEnvironment.merging(["DISPLAY": display.name]) { $1 })
            #expect(result.status == 0, "\(result.stderr)")
            let start = try #require(try jsonEvents(result.stdout).first { $0["event"] as? String == "start" })
            if protecting {
                // Capturing wins over the X11 session's unknown: the mirror source is part of `auto`.
                #expect(start["state"] as? String == "capturing" && start["source"] as? String == "mirror", "\(start)")
            } else {
                // Allowed, the mirror is clear, and the X11 session's unknown decides.
                #expect(start["state"] as? String == "unknown" && start["source"] as? String == "session", "\(start)")
            }
            #expect(start["protecting"] as? Bool == true)
        }
    }

    @Test func oneXvfbScreenIsNotAMirror() throws {
        let display = try VirtualDisplay()
        let result = try guardPlay(
            [
                fixture("clip.mp4"), "--video-out", "window", "--capture-source", "mirror", "--length", "1",
                "--poll-interval", "100ms", "--status", "json",
            ], environment: ["DISPLAY": display.name, "SDL_AUDIODRIVER": "dummy"], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        let events = try jsonEvents(result.stdout)
        let start = try #require(events.first { $0["event"] as? String == "start" }, "\(events)")
        // Clear, not unknown: xrandr ran on the Xvfb and its text was read (an unreadable one is unknown).
        #expect(start["state"] as? String == "clear" && start["source"] as? String == "mirror", "\(start)")
        #expect(start["protecting"] as? Bool == false)
        // Ten polls in a second, none of them protecting.
        #expect(!events.contains { $0["protecting"] as? Bool == true }, "\(events)")
    }

    @Test(arguments: [("protect", true), ("allow", false)])
    func anXServerThatDoesNotAnswerIsUnknown(_ policy: String, _ protecting: Bool) throws {
        let directory = try TemporaryDirectory()
        let result = try guardPlay(
            [
                fixture("song.m4a"), "--video-out", "null", "--capture-source", "mirror", "--on-unknown", policy,
                "--length", "0.3", "--status", "json",
            ], environment: headlessEnvironment.merging(["DISPLAY": unservedDisplay(in: directory)]) { $1 })
        #expect(result.status == 0, "\(result.stderr)")
        let start = try #require(try jsonEvents(result.stdout).first { $0["event"] as? String == "start" })
        #expect(start["state"] as? String == "unknown" && start["source"] as? String == "mirror", "\(start)")
        #expect(start["protecting"] as? Bool == protecting)
    }

    @Test func withoutAnXDisplayTheSysfsReadingSaysWhatItCannotTell() throws {
        let result = try guardPlay(
            [
                fixture("song.m4a"), "--capture-source", "mirror", "--output", "null", "--length", "0.3", "--status",
                "json",
            ],
            environment: headlessEnvironment)
        #expect(result.status == 0, "\(result.stderr)")
        let events = try jsonEvents(result.stdout)
        #expect(
            events.contains { ($0["message"] as? String)?.contains("mirror without an X display") == true }, "\(events)"
        )
        let start = try #require(events.first { $0["event"] as? String == "start" })
        #expect(start["source"] as? String == "mirror", "\(start)")
        // One lit DRM connector would be clear; a machine with none or several (or no /sys/class/drm, as in
        // a container) is unknown and protects.
        let connectors = DRMConnectors()
        #expect(
            start["state"] as? String == (connectors.lit.count == 1 && connectors.failure == nil ? "clear" : "unknown"))
    }

    @Test(arguments: [
        (["--on-mirror", "sometimes"], Int32(3), "invalid value 'sometimes' for --on-mirror"),
        (["--on-mirror", "allow", "--capture-source", "process"], 2, "--on-mirror is only used with"),
    ])
    func badMirrorOptions(_ arguments: [String], _ status: Int32, _ message: String) throws {
        let result = try guardPlay([fixture("song.m4a")] + arguments, environment: headlessEnvironment)
        #expect(result.status == status)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
