public import CaptureMonitor

/// The kind of graphical session GuardPlay runs in.
public enum DisplaySession: String, Sendable, Hashable {
    /// A Wayland compositor: other clients can capture only through the portal and PipeWire, which the
    /// PipeWire watcher sees.
    case wayland
    /// An X server: any client may read the screen without notice.
    case x11
    /// No display at all.
    case none

    /// Reads the session from `XDG_SESSION_TYPE`, then `WAYLAND_DISPLAY`, then `DISPLAY`.
    public static func detect(environment: [String: String]) -> DisplaySession {
        switch environment["XDG_SESSION_TYPE"] {
        case "wayland": return .wayland
        case "x11": return .x11
        default: break
        }
        if let wayland = environment["WAYLAND_DISPLAY"], !wayland.isEmpty { return .wayland }
        if let display = environment["DISPLAY"], !display.isEmpty { return .x11 }
        return .none
    }
}

/// Reports what the session type alone says: on X11 the screen can be read unseen, so the state is
/// `unknown` and the `--on-unknown` policy decides; elsewhere this source reports `clear` and leaves the
/// verdict to the detectors.
public final class SessionTypeSource: LiveCaptureSource {
    public let name = "session"
    /// The session it reports on.
    public let session: DisplaySession

    /// Creates a source for `session`.
    public init(session: DisplaySession) {
        self.session = session
    }

    public func start(_ reporter: CaptureReporter) {
        switch session {
        case .x11:
            reporter.report(
                .unknown, reason: "X11 session: any client can capture the screen without a trace", confidence: 0.5)
        case .wayland:
            reporter.report(.clear, reason: "Wayland session: capture goes through PipeWire", confidence: 0.5)
        case .none:
            reporter.report(.clear, reason: "no display", confidence: 0.5)
        }
    }

    public func stop() {}
}
