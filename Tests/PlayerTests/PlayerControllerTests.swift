import CaptureMonitor
import Foundation
import Player
import Synchronization
import Testing

let mediaDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("media")

func fixture(_ name: String) -> String { mediaDirectory.appendingPathComponent(name).path }

/// Collects a player's events.
final class EventLog: Sendable {
    private let events = Mutex<[PlayerEvent]>([])
    func append(_ event: PlayerEvent) { events.withLock { $0.append(event) } }
    var all: [PlayerEvent] { events.withLock { $0 } }
    var captures: [CaptureEvent] {
        all.compactMap { if case .capture(let event, _) = $0 { event } else { nil } }
    }
}

func fastNull(_ name: String) -> PlayerOptions {
    var options = PlayerOptions(path: fixture(name))
    options.pacing = .fast
    options.output = .null
    return options
}

/// The player driven through its API, as the gateway's `--control` will drive it.
@Suite struct PlayerControllerTests {
    @Test func scheduleDrivesEventsAndCounters() throws {
        let monitor = CaptureMonitor(scheduled: [try SimulatedSchedule(parsing: "2-5")])
        let player = try Player(options: fastNull("song.m4a"), monitor: monitor)
        let log = EventLog()
        player.addListener { log.append($0) }
        player.start()
        let summary = try player.wait()
        #expect(summary.reason == "end")
        #expect(summary.audioFramesProtected == 3 * 44_100)
        #expect(summary.stateChanges == 2)
        #expect(log.captures.map(\.state) == [.capturing, .clear])
        #expect(log.captures.map(\.since.media) == [2, 5])
        guard case .started(let status) = log.all.first, case .finished = log.all.last else {
            Issue.record("events do not start with started and end with finished: \(log.all)")
            return
        }
        #expect(status.capture.state == .clear && status.hasAudio && !status.hasVideo)
    }

    @Test func aRemoteReportProtectsEverything() throws {
        let monitor = CaptureMonitor()
        let remote = RemoteCaptureSource(client: "test")
        monitor.attach(remote)
        #expect(remote.receive(.capturing, sequence: 1, lease: 3600, app: "recorder") == .accepted)
        let player = try Player(options: fastNull("clip.mp4"), monitor: monitor)
        let log = EventLog()
        player.addListener { log.append($0) }
        player.start()
        let summary = try player.wait()
        #expect(summary.audioFrames > 0 && summary.audioFramesProtected == summary.audioFrames)
        #expect(summary.videoFrames == 300 && summary.videoFramesMasked == 300)
        guard case .started(let status) = log.all.first else {
            Issue.record("no started event")
            return
        }
        #expect(status.capture.source == "remote:test" && status.capture.app == "recorder" && status.isProtecting)
    }

    @Test(arguments: [UnknownPolicy.protect, .allow])
    func aLapsedRemoteLeaseFollowsThePolicy(policy: UnknownPolicy) throws {
        let monitor = CaptureMonitor(policy: policy)
        let remote = RemoteCaptureSource(client: "silent")
        monitor.attach(remote)
        // A lease of zero seconds has lapsed by the time playback starts: the client went quiet.
        #expect(remote.receive(.clear, sequence: 1, lease: 0) == .accepted)
        let player = try Player(options: fastNull("video-only.mp4"), monitor: monitor)
        player.start()
        let summary = try player.wait()
        #expect(monitor.current.state == .unknown)
        #expect(summary.videoFrames == 100)
        #expect(summary.videoFramesMasked == (policy == .protect ? 100 : 0))
    }

    @Test func stopEndsPlaybackEarly() throws {
        var options = fastNull("clip.mp4")
        options.pacing = .realtime
        let player = try Player(options: options, monitor: CaptureMonitor())
        player.start()
        player.stop()
        let summary = try player.wait()
        #expect(summary.reason == "stopped")
        #expect(summary.position < 5)
    }

    @Test func seekJumpsAndIsAnnounced() throws {
        var options = fastNull("chime-48k.flac")
        options.pacing = .realtime
        let monitor = CaptureMonitor(scheduled: [try SimulatedSchedule(parsing: "3.5-")])
        let player = try Player(options: options, monitor: monitor)
        let log = EventLog()
        player.addListener { log.append($0) }
        player.start()
        player.seek(to: 3)
        let summary = try player.wait()
        #expect(summary.reason == "end")
        #expect(log.all.contains { if case .seeked = $0 { true } else { false } })
        // Only the last second was played: about 1 s of audio, half of it protected.
        #expect(summary.audioFrames < 2 * 48_000)
        #expect(log.captures.map(\.state) == [.capturing])
        #expect(summary.audioFramesProtected >= 24_000 - 1024)
    }

    @Test func pauseAndMuteAreReflectedInStatus() throws {
        var options = fastNull("song.m4a")
        options.pacing = .realtime
        let player = try Player(options: options, monitor: CaptureMonitor())
        player.start()
        player.pause()
        #expect(player.status.isPaused)
        #expect(player.toggleMute())
        #expect(player.status.isMuted)
        #expect(player.status.line.contains("paused") && player.status.line.contains("muted by user"))
        player.stop()
        #expect(try player.wait().reason == "stopped")
    }

    @Test func aLeaseLapsingWhilePausedIsAnnounced() throws {
        let wall = Mutex(0.0)
        let monitor = CaptureMonitor(wallClock: { wall.withLock { $0 } })
        let remote = RemoteCaptureSource(client: "phone")
        monitor.attach(remote)
        #expect(remote.receive(.clear, sequence: 1, lease: 5) == .accepted)
        var options = fastNull("song.m4a")
        options.pacing = .realtime
        let player = try Player(options: options, monitor: monitor)
        let log = EventLog()
        player.addListener { log.append($0) }
        player.pause()
        player.start()
        // Nothing plays and media time stands still; only the wall clock moves past the lease.
        wall.withLock { $0 = 6 }
        var waited = 0
        while log.captures.isEmpty && waited < 100 {
            usleep(50_000)
            waited += 1
        }
        #expect(log.captures.map(\.state) == [.unknown])
        #expect(log.captures.first?.source == "remote:phone")
        #expect(player.status.isProtecting && player.status.isPaused)
        player.stop()
        #expect(try player.wait().stateChanges == 1)
    }

    @Test func badInputIsATypedError() {
        #expect {
            try Player(options: fastNull("no-such-file.m4a"), monitor: CaptureMonitor())
        } throws: { error in
            (error as? PlayerError)?.kind == .inputMissing
        }
    }
}
