import CaptureMonitor

/// The outputs of a display server that show a picture, and whether any two of them show the same part
/// of the desktop: a clone ("mirror") rather than an extended desktop.
public struct DisplayLayout: Sendable, Hashable {
    /// A rectangle of the desktop in pixels, as RandR gives a CRTC's geometry (`WxH+X+Y`).
    public struct Rectangle: Sendable, Hashable, CustomStringConvertible {
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int
        /// Left edge on the desktop.
        public var x: Int
        /// Top edge on the desktop.
        public var y: Int

        /// Creates a rectangle.
        public init(width: Int, height: Int, x: Int, y: Int) {
            self.width = width
            self.height = height
            self.x = x
            self.y = y
        }

        /// Parses `WxH+X+Y` as xrandr prints it (a negative offset reads `+-1920`); nil for anything else
        /// or an empty rectangle.
        public init?(geometry text: Substring) {
            let size = text.split(separator: "+", maxSplits: 1, omittingEmptySubsequences: false)
            guard size.count == 2 else { return nil }
            let sides = size[0].split(separator: "x", omittingEmptySubsequences: false)
            let offsets = size[1].split(separator: "+", omittingEmptySubsequences: false)
            guard sides.count == 2, offsets.count == 2,
                let width = Int(sides[0]), let height = Int(sides[1]), width > 0, height > 0,
                let x = Int(offsets[0]), let y = Int(offsets[1])
            else { return nil }
            self.init(width: width, height: height, x: x, y: y)
        }

        /// True when the two share at least one pixel (touching edges share none).
        public func overlaps(_ other: Rectangle) -> Bool {
            x < other.x + other.width && other.x < x + width && y < other.y + other.height
                && other.y < y + height
        }

        public var description: String { "\(width)x\(height)+\(x)+\(y)" }
    }

    /// One output that a CRTC drives, whether or not a monitor is sensed on it.
    public struct Output: Sendable, Hashable {
        /// Its name (`HDMI-1`, `eDP-1`, Xvfb's `screen`).
        public var name: String
        /// The part of the desktop it shows.
        public var rectangle: Rectangle

        /// Creates an output.
        public init(name: String, rectangle: Rectangle) {
            self.name = name
            self.rectangle = rectangle
        }
    }

    /// The active outputs, in the order the server lists them.
    public var active: [Output]
    /// Outputs connected but with no CRTC (switched off): they show nothing.
    public var inactive: [String]

    /// Creates a layout.
    public init(active: [Output], inactive: [String] = []) {
        self.active = active
        self.inactive = inactive
    }

    /// Parses the text of `xrandr --query` or `--current` (also the first line of each output in `--verbose`). Throws
    /// on text that is not RandR's: no `Screen N:` line, an output line it cannot read, or no active
    /// output at all, so that garbage becomes `unknown` rather than "no mirror".
    public init(xrandr text: String) throws(DisplayLayoutError) {
        var sawScreen = false
        var active: [Output] = []
        var inactive: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.hasPrefix("Screen ") {
                sawScreen = true
                continue
            }
            // Modes and properties are indented; blank lines carry nothing.
            guard let first = line.first, !first.isWhitespace else { continue }
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard words.count >= 2, sawScreen else {
                throw DisplayLayoutError(line: number + 1, "not an xrandr output line: '\(line.prefix(80))'")
            }
            let name = String(words[0])
            switch words[1] {
            case "disconnected":
                // With a geometry, a CRTC still drives it: a monitor whose hot-plug line is not sensed
                // (a forced mode, a splitter, Xorg's dummy driver) shows the picture all the same, so it
                // counts, failing closed. A stale CRTC after an unplug counts too until it is switched off.
                if let geometry = words.dropFirst(2).first, let rectangle = Rectangle(geometry: geometry) {
                    active.append(Output(name: name, rectangle: rectangle))
                }
            case "connected":
                var rest = words.dropFirst(2)
                if rest.first == "primary" { rest = rest.dropFirst() }
                if let geometry = rest.first, let rectangle = Rectangle(geometry: geometry) {
                    active.append(Output(name: name, rectangle: rectangle))
                } else if rest.first?.hasPrefix("(") ?? true {
                    // `connected (normal left inverted …)`: no CRTC, so the output is off.
                    inactive.append(name)
                } else {
                    throw DisplayLayoutError(
                        line: number + 1, "output \(name): unreadable geometry '\(rest.first ?? "")'")
                }
            case "unknown":
                // `unknown connection`: the driver cannot tell; a geometry means it shows a picture.
                if let geometry = words.dropFirst(3).first, let rectangle = Rectangle(geometry: geometry) {
                    active.append(Output(name: name, rectangle: rectangle))
                } else {
                    inactive.append(name)
                }
            default:
                throw DisplayLayoutError(line: number + 1, "not an xrandr output line: '\(line.prefix(80))'")
            }
        }
        guard sawScreen else { throw DisplayLayoutError(line: 0, "no 'Screen N:' line: not xrandr output") }
        guard !active.isEmpty else { throw DisplayLayoutError(line: 0, "no active output") }
        self.init(active: active, inactive: inactive)
    }

    /// Pairs of active outputs that show a common part of the desktop. Two outputs at the same geometry
    /// are the classic clone; any overlap at all also counts (a smaller output at the same origin, a
    /// panned one), since every shared pixel is shown twice. Outputs that only touch, side by side, are
    /// an extended desktop and are not listed.
    public var mirrors: [(Output, Output)] {
        var pairs: [(Output, Output)] = []
        for (index, output) in active.enumerated() {
            for other in active[(index + 1)...] where output.rectangle.overlaps(other.rectangle) {
                pairs.append((output, other))
            }
        }
        return pairs
    }

    /// The report: `capturing` when outputs mirror each other (naming them), else `clear`; with
    /// `allowMirror` (`--on-mirror allow`) a mirror is reported `clear` with the same names.
    public func verdict(allowMirror: Bool = false) -> PollVerdict {
        if let (first, second) = mirrors.first {
            let what =
                "\(second.name) (\(second.rectangle)) shows the same picture as \(first.name) (\(first.rectangle))"
            let more = mirrors.count > 1 ? " (and \(mirrors.count - 1) more)" : ""
            if allowMirror {
                return PollVerdict(
                    .clear, reason: "\(what)\(more); allowed by --on-mirror allow", app: second.name, confidence: 0.9)
            }
            return PollVerdict(
                .capturing, reason: "mirrored display: \(what)\(more)", app: second.name, confidence: 0.9)
        }
        let names = active.map { "\($0.name) \($0.rectangle)" }.joined(separator: ", ")
        let kind = active.count == 1 ? "one active output" : "extended desktop, no output mirrors another"
        return PollVerdict(.clear, reason: "\(kind): \(names)", confidence: 0.9)
    }
}

/// Display-layout text that could not be read, with the line (1-based; 0 for the whole text).
public struct DisplayLayoutError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The line at fault, 1-based; 0 for the text as a whole.
    public var line: Int
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(line: Int, _ message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { line > 0 ? "line \(line): \(message)" : message }
}
