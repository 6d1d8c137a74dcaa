import FoundationEssentials
import Glibc
import Player
import Synchronization
import SystemSupport

/// Reads single keys from an interactive terminal in raw mode and restores the terminal afterwards.
final class TerminalKeys: Sendable {
    // The terminal settings to restore; nil once restored, which also stops the reading thread.
    private let saved: Mutex<termios?>

    private init(saved: termios) {
        self.saved = Mutex(saved)
    }

    /// Starts reading keys when standard input and output are terminals; returns nil otherwise.
    static func startIfInteractive(_ handle: @escaping @Sendable (PlayerKey) -> Void) -> TerminalKeys? {
        guard isatty(STDIN_FILENO) == 1, isatty(STDERR_FILENO) == 1 else { return nil }
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return nil }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { bytes in
            bytes[Int(VMIN)] = 0
            bytes[Int(VTIME)] = 1
        }
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return nil }
        let keys = TerminalKeys(saved: original)
        startThread(name: "guard-play keys") { keys.readLoop(handle) }
        return keys
    }

    private func readLoop(_ handle: @Sendable (PlayerKey) -> Void) {
        var pending: [UInt8] = []
        var byte: UInt8 = 0
        while saved.withLock({ $0 != nil }) {
            let count = read(STDIN_FILENO, &byte, 1)
            guard count == 1 else { continue }
            pending.append(byte)
            switch pending {
            case [0x20]: handle(.pause)
            case [UInt8(ascii: "m")], [UInt8(ascii: "M")]: handle(.mute)
            case [UInt8(ascii: "r")], [UInt8(ascii: "R")]: handle(.record)
            case [UInt8(ascii: "q")], [UInt8(ascii: "Q")]: handle(.quit)
            case [0x1B], [0x1B, UInt8(ascii: "[")]: continue
            case [0x1B, UInt8(ascii: "["), UInt8(ascii: "D")]: handle(.seekBack)
            case [0x1B, UInt8(ascii: "["), UInt8(ascii: "C")]: handle(.seekForward)
            default: break
            }
            pending.removeAll()
        }
    }

    /// Puts the terminal back as it was and stops reading.
    func restore() {
        saved.withLock { saved in
            guard var original = saved else { return }
            tcsetattr(STDIN_FILENO, TCSANOW, &original)
            saved = nil
        }
    }
}
