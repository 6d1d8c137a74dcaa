import CaptureMonitor
import Dispatch
import FoundationEssentials
import Player
import Synchronization
import SystemSupport
import ThreadSupport

/// One run of the player from the command line: status display, keys, signals, and the exit code.
final class PlaySession: Sendable {
    private let player: Player
    private let status: StatusMode
    private let output = StatusOutput()
    private let interrupted = Mutex(false)

    init(player: Player, status: StatusMode) {
        self.player = player
        self.status = status
    }

    func run() -> ExitCode {
        let status = self.status
        let output = self.output
        let protection = [player.hasAudio ? "muted" : nil, player.hasVideo ? "masked" : nil].compactMap { $0 }
            .joined(separator: " and ")
        player.addListener { event in
            switch status {
            case .json:
                output.printLine(event.jsonLine, toStandardError: false)
            case .line, .log:
                switch event {
                case .warning(let message): output.printLine("guard-play: warning: \(message)", toStandardError: true)
                case .notice(let message): output.printLine("guard-play: note: \(message)", toStandardError: true)
                case .screenshotSaved(let path, let protecting) where status == .log:
                    output.printLine(
                        "guard-play: a screenshot was saved: \(path)"
                            + (protecting ? " (output was protected)" : " (output was NOT protected)"),
                        toStandardError: true)
                case .started(let now) where status == .log:
                    output.printLine(
                        "guard-play: playing \(now.path) to \(now.output); "
                            + now.line.trimmingSpaces(),
                        toStandardError: true)
                case .capture(let change, let protecting) where status == .log:
                    output.printLine(
                        String(cFormat: "%6.1f s  ", change.since.media)
                            + "\(change.state.rawValue) (\(change.source): "
                            + "\(change.reason))" + (protecting ? "  (protected: \(protection))" : ""),
                        toStandardError: true)
                default: break
                }
            case .none:
                break
            }
        }
        let partial: String? = if case .file(let path) = player.options.output { path } else { nil }
        let trap = InterruptTrap(
            onSignal: { [self] in
                interrupted.withLock { $0 = true }
                player.stop()
            },
            lastResort: { if let partial { Player.removePartialOutput(for: partial) } })
        defer { trap.release() }
        let keys = TerminalKeys.startIfInteractive { [player] key in player.press(key) }
        player.start()
        let ticker = status == .line ? startStatusLine() : nil
        let result: ExitCode
        do {
            let summary = try player.wait()
            ticker?.cancel()
            if status == .line { output.finishStatusLine(player.status.line) }
            if status == .log {
                output.printLine(
                    String(cFormat: "%6.1f s  ", summary.position) + "end (\(summary.reason)): "
                        + "\(summary.stateChanges) state changes, \(summary.videoFramesMasked)/\(summary.videoFrames) "
                        + "frames masked, \(summary.audioFramesProtected)/\(summary.audioFrames) audio frames muted",
                    toStandardError: true)
            }
            if summary.damagedPackets > 0 && status != .json {
                output.printLine(
                    "guard-play: warning: \(summary.damagedPackets) damaged packets were skipped", toStandardError: true
                )
            }
            result = interrupted.withLock { $0 } ? .interrupted : .success
        } catch {
            ticker?.cancel()
            if status == .line { output.finishStatusLine(player.status.line) }
            keys?.restore()
            output.printLine("guard-play: \(error.message)", toStandardError: true)
            return PlayCommand.exitCode(for: error.kind)
        }
        keys?.restore()
        return result
    }

    private func startStatusLine() -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now(), repeating: .milliseconds(200))
        timer.setEventHandler { [player, output] in output.updateStatusLine(player.status.line) }
        timer.resume()
        return timer
    }
}

/// Serialises what the session prints, so a status line and event lines never interleave mid-line.
final class StatusOutput: Sendable {
    private let lineShown = Mutex(false)

    /// Prints `line` and a newline, clearing a status line first; flushes at once.
    func printLine(_ line: String, toStandardError: Bool) {
        lineShown.withLock { shown in
            var text = line + "\n"
            if shown {
                text = "\r\u{1B}[K" + text
                shown = false
            }
            write(text, toStandardError: toStandardError)
        }
    }

    /// Redraws the status line in place on standard error.
    func updateStatusLine(_ line: String) {
        lineShown.withLock { shown in
            write("\r\u{1B}[K" + line, toStandardError: true)
            shown = true
        }
    }

    /// Draws the final status line and ends it.
    func finishStatusLine(_ line: String) {
        lineShown.withLock { shown in
            write("\r\u{1B}[K" + line + "\n", toStandardError: true)
            shown = false
        }
    }

    private func write(_ text: String, toStandardError: Bool) {
        (toStandardError ? StandardStream.error : StandardStream.output).write(text)
    }
}
