import CaptureMonitor
import ControlAPI
import FoundationEssentials
import Player
import Synchronization
import SystemSupport

/// The player as the control API drives it (`guard-play FILE --control ADDR`): pause, resume and seek
/// go to the `Player`; capture reports go to the `RemoteCaptureSource` attached to its monitor, which
/// is `unknown` until the first report and again when a client stops reporting and its lease lapses,
/// so the player protects; the player's events, in its `--status json` form, fan out to event streams.
final class PlayerControlAdapter: PlayerControlling {
    private struct Subscribers {
        var next = 0
        var all: [Int: @Sendable (String, JSON) -> Bool] = [:]
        var ended = false
    }

    private let player: Player
    private let remote: RemoteCaptureSource
    private let subscribers = Mutex(Subscribers())

    /// Drives `player`, with capture reports going to `remote` (already attached to its monitor), and
    /// listens to the player's events; call before `player.start()` so no event is missed.
    init(player: Player, remote: RemoteCaptureSource) {
        self.player = player
        self.remote = remote
        player.addListener { [weak self] event in self?.deliver(event) }
    }

    /// Sends a player event to every subscriber, as its `--status json` line parsed into JSON.
    private func deliver(_ event: PlayerEvent) {
        guard let payload = try? JSON.parse(Array(event.jsonLine.utf8)) else { return }
        let name = payload["event"]?.string ?? "event"
        let targets = subscribers.withLock { subscribers in
            if case .finished = event { subscribers.ended = true }
            return subscribers.all
        }
        for (id, subscriber) in targets where !subscriber(name, payload) {
            _ = subscribers.withLock { $0.all.removeValue(forKey: id) }
        }
    }

    var status: PlayerStatusReport {
        let status = player.status
        let ended = subscribers.withLock { $0.ended }
        return PlayerStatusReport(
            state: ended ? "ended" : status.isPaused ? "paused" : "playing", position: status.position,
            duration: status.duration, capture: status.capture.state.rawValue, captureSource: status.capture.source,
            captureReason: status.capture.reason, protecting: status.isProtecting)
    }

    func pause() { player.pause() }

    func resume() { player.resume() }

    func seek(to seconds: Double) { player.seek(to: seconds) }

    func reportCapture(capturing: Bool, seq: UInt64, lease: Double, observedAt: Date) -> PlayerReportOutcome {
        let outcome = remote.receive(
            capturing ? .capturing : .clear, sequence: seq, lease: lease,
            reason: "remote report observed \(RFC3339.format(observedAt))")
        // Apply it now rather than at the next rendered frame, so the status answered shows it.
        player.monitor.advance(toMedia: player.monitor.now.media)
        switch outcome {
        case .accepted: return .accepted
        case .stale(let last): return .stale(lastSeq: last)
        case .detached: return .stale(lastSeq: seq)
        }
    }

    func subscribe(_ subscriber: @escaping @Sendable (String, JSON) -> Bool) -> Int {
        subscribers.withLock { subscribers in
            subscribers.next += 1
            subscribers.all[subscribers.next] = subscriber
            return subscribers.next
        }
    }

    func unsubscribe(_ id: Int) {
        _ = subscribers.withLock { $0.all.removeValue(forKey: id) }
    }
}
