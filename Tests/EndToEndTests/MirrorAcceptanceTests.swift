import Foundation
import ProcessTestSupport
import Testing

/// The mirrored-display source end to end, with the real `xrandr`: a private Xvfb has one output, so the
/// player in a window on it stays clear; an X display nobody serves is unknown and protects. Xvfb's RandR
/// has a single output (`screen`) and no way to add or clone one, so a real two-output clone is not run
/// here; the clone decision is tested on xrandr text (CaptureDetectorsTests' DisplayLayoutTests).
@Suite(.hangGuard) struct MirrorAcceptanceTests {
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
