public import CaptureMonitor
import FoundationEssentials
import SystemSupport

/// The mirrored-display watcher as a capture source: every `interval` seconds it asks the X server's
/// RandR (`xrandr --current` on `DISPLAY`) which outputs show which part of the desktop, and reports
/// `capturing` when two outputs show the same picture (`DisplayLayout`); with no X display it reads the
/// DRM connectors in sysfs instead (`DRMConnectors`). Each report is leased like the process scanner's.
public final class MirrorSource: LiveCaptureSource {
    /// Where the layout comes from.
    public enum Backend: Sendable, Hashable {
        /// `xrandr --current` on this X display.
        case xrandr(display: String)
        /// The DRM connectors under this sysfs directory.
        case sysfs(root: String)

        /// `xrandr` when `DISPLAY` is set, else sysfs.
        public static func detect(environment: [String: String]) -> Backend {
            if let display = environment["DISPLAY"], !display.isEmpty { return .xrandr(display: display) }
            return .sysfs(root: "/sys/class/drm")
        }
    }

    public let name: String
    /// Seconds between looks.
    public let interval: Double
    /// Seconds each report is believed.
    public let lease: Double
    private let poll: @Sendable () -> PollVerdict
    private let loop: PollingLoop

    /// Creates a watcher over `backend`; `allowMirror` is `--on-mirror allow`.
    public convenience init(interval: Double = 0.25, backend: Backend, allowMirror: Bool) {
        self.init(interval: interval) {
            switch backend {
            case .xrandr(let display):
                do {
                    return try DisplayLayout(xrandr: try Self.query(display: display)).verdict(allowMirror: allowMirror)
                } catch {
                    return PollVerdict(
                        .unknown, reason: "xrandr on \(display): \(error)", app: "xrandr", confidence: 0.5)
                }
            case .sysfs(let root):
                return DRMConnectors(root: root).verdict(allowMirror: allowMirror)
            }
        }
    }

    /// Creates a source around any poll function.
    public init(
        name: String = "mirror", interval: Double = 0.25, lease: Double? = nil,
        poll: @escaping @Sendable () -> PollVerdict
    ) {
        self.name = name
        self.interval = interval
        self.lease = lease ?? PollingLoop.lease(for: interval)
        self.poll = poll
        loop = PollingLoop(name: name, interval: interval, lease: self.lease)
    }

    public func start(_ reporter: CaptureReporter) {
        loop.start(reporter, poll: poll)
    }

    public func stop() {
        loop.stop()
    }

    /// The most `xrandr --current` text read: a few dozen outputs take a few kilobytes.
    static let maximumQueryBytes = 1 << 20

    /// Runs `xrandr --current` on `display` and returns what it printed: the layout the server holds,
    /// without `--query`'s re-probe of every connector (EDID reads, slow and known to stall some drivers,
    /// and this runs four times a second). Its text is `--query`'s. A hung X server hangs this poll, and the
    /// lease then lapses to `unknown`.
    static func query(display: String) throws(DisplayLayoutError) -> String {
        guard let executable = PipeWireCaptureSource.findExecutable("xrandr") else {
            throw DisplayLayoutError(line: 0, "xrandr not found on PATH (Debian: x11-xserver-utils)")
        }
        let process: ChildProcess
        do {
            process = try ChildProcess(
                executable: executable, arguments: ["--current"],
                environment: ProcessInfo.processInfo.environment.merging(["DISPLAY": display]) { _, new in new })
        } catch {
            throw DisplayLayoutError(line: 0, "cannot start xrandr: \(error)")
        }
        var bytes: [UInt8] = []
        while bytes.count <= maximumQueryBytes {
            let chunk = process.read(upTo: 65536)
            if chunk.isEmpty { break }
            bytes += chunk
        }
        if bytes.count > maximumQueryBytes { process.terminate() }
        let status = process.waitForExit()
        guard bytes.count <= maximumQueryBytes else {
            throw DisplayLayoutError(line: 0, "xrandr printed over \(maximumQueryBytes) bytes")
        }
        guard status == 0 else {
            throw DisplayLayoutError(line: 0, "xrandr failed (status \(status.map(String.init) ?? "signal"))")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
