import CaptureMonitor
import FoundationEssentials
import SystemSupport

/// The display connectors the kernel's DRM drivers list in sysfs (`/sys/class/drm/card0-HDMI-A-1/status`
/// and `enabled`), for sessions where no X server can be asked (Wayland, a console).
///
/// Sysfs says which connectors are lit, not which part of the desktop each shows: it has no CRTC
/// geometry. So one lit connector is `clear` (nothing else can show the picture), and two or more are
/// `unknown` (a clone and an extended desktop look alike here), which the `--on-unknown` policy settles,
/// protecting by default. No connector at all is `unknown` too: the display our window is on is not
/// among them (a virtual or nested display), so nothing can be concluded.
public struct DRMConnectors: Sendable, Hashable {
    /// A connector lit (connected, or of unknown connection, and enabled), as `card0-HDMI-A-1`.
    public var lit: [String] = []
    /// Connectors present but dark (disconnected or disabled).
    public var dark: [String] = []
    /// Why the tree could not be read, when it could not.
    public var failure: String?

    /// Creates a reading from lists, as tests do.
    public init(lit: [String], dark: [String] = [], failure: String? = nil) {
        self.lit = lit
        self.dark = dark
        self.failure = failure
    }

    /// Reads every `card*-*` connector under `root`.
    public init(root: String = "/sys/class/drm") {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else {
            failure = "\(root) cannot be read"
            return
        }
        for name in names.sorted() where name.hasPrefix("card") && name.contains("-") {
            func read(_ file: String) -> String? {
                (try? String(contentsOfFile: "\(root)/\(name)/\(file)", encoding: .utf8))?
                    .trimmingSpacesAndLineBreaks()
            }
            guard let status = read("status") else {
                failure = "\(root)/\(name)/status cannot be read"
                return
            }
            // Drivers without `enabled` (old kernels) are taken as enabled: fail closed.
            let enabled = read("enabled") ?? "enabled"
            if status != "disconnected" && enabled != "disabled" { lit.append(name) } else { dark.append(name) }
        }
    }

    /// The report: `clear` for one lit connector; `unknown` for none, two or more, or an unreadable
    /// tree. With `allowMirror` (`--on-mirror allow`), two or more lit connectors are `clear`, since a
    /// mirror would be allowed anyway.
    public func verdict(allowMirror: Bool = false) -> PollVerdict {
        if let failure {
            return PollVerdict(.unknown, reason: "DRM connectors: \(failure)", confidence: 0.5)
        }
        let names = lit.joined(separator: ", ")
        switch lit.count {
        case 0:
            return PollVerdict(
                .unknown, reason: "no lit DRM connector: the display in use is not a DRM one", confidence: 0.5)
        case 1:
            return PollVerdict(.clear, reason: "one lit DRM connector: \(names)", confidence: 0.8)
        default:
            if allowMirror {
                return PollVerdict(
                    .clear, reason: "\(lit.count) lit DRM connectors (\(names)); mirrors allowed by --on-mirror allow",
                    confidence: 0.8)
            }
            return PollVerdict(
                .unknown,
                reason: "\(lit.count) lit DRM connectors (\(names)): sysfs cannot tell a mirror from an "
                    + "extended desktop", confidence: 0.5)
        }
    }
}
