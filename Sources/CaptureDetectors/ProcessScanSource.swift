public import CaptureMonitor
import Foundation
import Synchronization
import ThreadSupport

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
    private let thread = Mutex<PeriodicThread?>(nil)

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
        self.lease = lease ?? max(interval * 2 + 0.1, 0.5)
        self.scan = scan
    }

    public func start(_ reporter: CaptureReporter) {
        let interval = interval
        let lease = lease
        let scan = scan
        let tick: @Sendable () -> Void = {
            let found = scan()
            if let first = found.sorted(by: Self.priority).first {
                let more = found.count > 1 ? " (and \(found.count - 1) more)" : ""
                reporter.report(
                    .capturing, reason: "\(first.reason), pid \(first.pid)\(more)", pid: first.pid, app: first.app,
                    confidence: first.confidence, lease: lease)
            } else {
                reporter.report(.clear, reason: "no recorder running", confidence: 0.8, lease: lease)
            }
        }
        // The first scan runs here, so its report is in place before playback begins.
        tick()
        let started = PeriodicThread(
            name: "guardplay.\(name)", interval: interval, firstTickAfter: interval, tick: tick)
        thread.withLock { $0 = started }
    }

    public func stop() {
        thread.withLock { $0 }?.stop(waitingAtMost: 1)
    }

    /// Screen before screenshot before audio, then the surer match.
    static func priority(_ a: ProcessDetection, _ b: ProcessDetection) -> Bool {
        let order: [CaptureKind: Int] = [.screen: 0, .screenshot: 1, .audio: 2]
        return (order[a.kind]!, -a.confidence, a.pid) < (order[b.kind]!, -b.confidence, b.pid)
    }
}
