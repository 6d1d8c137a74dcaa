public import CaptureMonitor
import Foundation

/// The process scanner as a capture source: every `interval` seconds it reads `/proc` and reports
/// `capturing` while a known recorder runs, `clear` otherwise, each report leased for `lease` seconds.
/// A scan that hangs or a scanner that dies stops the renewals, so the lease lapses to `unknown`. The
/// first scan runs inside `start`, so the state is known before playback begins.
public final class ProcessScanSource: LiveCaptureSource {
    /// Seconds between scans (250 ms by default).
    public let interval: Double
    /// Seconds each report is believed.
    public let lease: Double
    public let name: String
    private let scan: @Sendable () -> [ProcessDetection]
    private let loop: PollingLoop

    /// Creates a scanner over `table` with `classifier`, skipping GuardPlay's own process.
    public convenience init(
        interval: Double = 0.25, table: ProcessTable = ProcessTable(),
        classifier: ProcessClassifier = ProcessClassifier()
    ) {
        let own = getpid()
        self.init(interval: interval) {
            table.snapshot().filter { $0.pid != own }.compactMap(classifier.classify)
        }
    }

    /// Creates a source around any scan function (tests pass one that hangs or fails).
    public init(
        name: String = "process-scan", interval: Double = 0.25, lease: Double? = nil,
        scan: @escaping @Sendable () -> [ProcessDetection]
    ) {
        self.name = name
        self.interval = interval
        self.lease = lease ?? PollingLoop.lease(for: interval)
        self.scan = scan
        loop = PollingLoop(name: name, interval: interval, lease: self.lease)
    }

    public func start(_ reporter: CaptureReporter) {
        let scan = scan
        loop.start(reporter) { Self.verdict(scan()) }
    }

    public func stop() {
        loop.stop()
    }

    /// `capturing` for the first detection in priority order, `clear` when there is none.
    static func verdict(_ found: [ProcessDetection]) -> PollVerdict {
        guard let first = found.sorted(by: priority).first else {
            return PollVerdict(.clear, reason: "no recorder running", confidence: 0.8)
        }
        let more = found.count > 1 ? " (and \(found.count - 1) more)" : ""
        return PollVerdict(
            .capturing, reason: "\(first.reason), pid \(first.pid)\(more)", pid: first.pid, app: first.app,
            confidence: first.confidence)
    }

    /// Screen before screenshot before audio, then the surer match.
    static func priority(_ a: ProcessDetection, _ b: ProcessDetection) -> Bool {
        let order: [CaptureKind: Int] = [.screen: 0, .screenshot: 1, .audio: 2]
        return (order[a.kind]!, -a.confidence, a.pid) < (order[b.kind]!, -b.confidence, b.pid)
    }
}
