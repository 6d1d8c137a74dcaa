public import CaptureMonitor
import FoundationEssentials
import Glibc
import Synchronization

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
    private let newTasks: NewTaskCheck?
    private let loop: PollingLoop

    /// How the scanner looks at newly created tasks between its regular scans.
    public struct NewTaskCheck: Sendable {
        /// Seconds between readings of the newest PID while nothing new was created (25 ms by default).
        public var interval: Double
        /// Seconds between readings while a new task is within its exec window (10 ms, or `interval`
        /// when that is shorter): a shell's exec follows its fork by a few milliseconds.
        public var busyInterval: Double { min(interval, NewTaskCheck.busyInterval) }
        /// The reading's period while a new task is young.
        public static let busyInterval = 0.01
        /// Reads the newest PID (`ProcessTable.newestPID()`).
        public var newestPID: @Sendable () -> Int32?
        /// The recorders among these task IDs.
        public var classify: @Sendable ([Int32]) -> [ProcessDetection]

        /// Creates a check.
        public init(
            interval: Double = 0.025, newestPID: @escaping @Sendable () -> Int32?,
            classify: @escaping @Sendable ([Int32]) -> [ProcessDetection]
        ) {
            self.interval = interval
            self.newestPID = newestPID
            self.classify = classify
        }

        /// The check over `table` with `classifier`: each task ID read as a process, a thread counted as
        /// its process, processes failing `keep` skipped. A task looked at again (every reading of its
        /// exec window) costs one `pread` of its kept-open `comm` while that is unchanged: an exec renames
        /// it, so only then are its command line and classification read again (`WatchedTasks`). (A
        /// wrapper that execs a program of its own name is the regular scan's, like any late exec.)
        public init(
            interval: Double = 0.025, table: ProcessTable, classifier: ProcessClassifier,
            keep: @escaping @Sendable (Int32) -> Bool = { _ in true }
        ) {
            self.init(interval: interval, scanner: ProcessScanner(table: table, classifier: classifier), keep: keep)
        }

        /// The check through `scanner`, which the regular scan may share.
        init(interval: Double, scanner: ProcessScanner, keep: @escaping @Sendable (Int32) -> Bool) {
            let reader = LoadAverageReader(table: scanner.table)
            let watched = WatchedTasks(scanner: scanner, keep: keep)
            self.init(interval: interval, newestPID: { reader.newestPID() }, classify: watched.classify)
        }
    }

    /// Creates a scanner over `table` with `classifier`, skipping GuardPlay's own process; with
    /// `quickInterval` (25 ms by default, nil for none) it also reads the newest PID that often (every
    /// 10 ms while a new task is young) and looks at each new task at once, so a recorder is seen within
    /// milliseconds of its start instead of at the next scan.
    public convenience init(
        interval: Double = 0.25, quickInterval: Double? = 0.025, table: ProcessTable = ProcessTable(),
        classifier: ProcessClassifier = ProcessClassifier()
    ) {
        let own = getpid()
        // One scanner, so the regular scan and the new tasks' looks share the procfs root's descriptor.
        let scanner = ProcessScanner(table: table, classifier: classifier)
        let check = quickInterval.map { NewTaskCheck(interval: $0, scanner: scanner) { $0 != own } }
        self.init(interval: interval, newTasks: check) { scanner.scan(skipping: own) }
    }

    /// Creates a source around any scan function (tests pass one that hangs or fails), and optionally a
    /// check of new tasks between scans.
    public init(
        name: String = "process-scan", interval: Double = 0.25, lease: Double? = nil, newTasks: NewTaskCheck? = nil,
        scan: @escaping @Sendable () -> [ProcessDetection]
    ) {
        self.name = name
        self.interval = interval
        self.lease = lease ?? PollingLoop.lease(for: interval)
        self.scan = scan
        self.newTasks = newTasks
        loop = PollingLoop(name: name, interval: interval, lease: self.lease)
    }

    public func start(_ reporter: CaptureReporter) {
        let scan = scan
        // The last full scan's detections, so a verdict from new tasks alone does not hide them.
        let lastScan = Mutex<[ProcessDetection]>([])
        let poll: @Sendable () -> PollVerdict = {
            let found = scan()
            lastScan.withLock { $0 = found }
            return Self.verdict(found)
        }
        guard let newTasks else {
            loop.start(reporter, poll: poll)
            return
        }
        // The baseline reading comes before the first scan: a task created after it is either in that
        // scan or among the new ones.
        // A shell's fork and exec are usually a few milliseconds apart; a task that execs a recorder
        // later than the window is the regular scan's.
        var baseline = NewProcessWatch(window: min(interval, Self.execWindow))
        _ = baseline.observe(newest: newTasks.newestPID(), at: MonotonicClock.seconds())
        let watch = Mutex(baseline)
        loop.start(
            reporter, quickInterval: newTasks.busyInterval, idleQuickInterval: newTasks.interval,
            quick: {
                let reading = newTasks.newestPID()
                let step = watch.withLock { $0.observe(newest: reading, at: MonotonicClock.seconds()) }
                switch step {
                case .nothing:
                    return .init(verdict: nil, busy: false)
                case .scanAll:
                    return .init(verdict: poll(), busy: false)
                case .check(let pids):
                    // Young tasks: read again soon, they may exec a recorder any moment.
                    let found = newTasks.classify(pids)
                    guard !found.isEmpty else { return .init(verdict: nil, busy: true) }
                    let known = lastScan.withLock { $0 }
                    let verdict = Self.verdict(known + found.filter { new in !known.contains { $0.pid == new.pid } })
                    return .init(verdict: verdict, busy: true)
                }
            }, poll: poll)
    }

    public func stop() {
        loop.stop()
    }

    /// Seconds a new task is looked at again, waiting for it to exec (at most one poll interval).
    static let execWindow = 0.05

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
