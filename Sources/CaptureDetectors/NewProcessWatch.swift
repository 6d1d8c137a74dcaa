/// Which newly created tasks the process scanner should look at between its regular scans, from
/// successive readings of the newest PID (`ProcessTable.newestPID()`).
///
/// A task seen new is looked at again on every reading for `window` seconds, because a shell forks first
/// (the new PID's `comm` is still `sh`) and execs the recorder a moment later. A jump of more than
/// `maxGap` PIDs at once, or a PID that went down (the counter wrapped), asks for a full scan instead.
/// A recorder that execs later than the window, or is renamed, is left to the regular scan, and so are
/// the oldest of more than `maxRecent` recent tasks.
struct NewProcessWatch: Sendable, Equatable {
    /// What to do after a reading.
    enum Step: Sendable, Equatable {
        /// Nothing new, and nothing recent to look at again.
        case nothing
        /// Look at these tasks (new ones and recent ones), in ascending order.
        case check([Int32])
        /// Too many new tasks, or the counter wrapped: scan everything now.
        case scanAll
    }

    /// Seconds a new task is looked at again.
    let window: Double
    /// The most new tasks taken from one reading.
    let maxGap: Int32
    /// The most recent tasks kept (the newest), so a machine busy starting processes costs a bounded
    /// number of reads per wake-up.
    let maxRecent: Int
    /// The newest PID last read.
    private(set) var newest: Int32?
    /// Tasks seen new within the window, with the time each was first seen.
    private(set) var recent: [Int32: Double] = [:]

    init(window: Double, maxGap: Int32 = 64, maxRecent: Int = 128) {
        self.window = window
        self.maxGap = maxGap
        self.maxRecent = maxRecent
    }

    /// Takes the newest PID read at `now` (seconds, any monotonic clock); nil when it could not be read.
    mutating func observe(newest reading: Int32?, at now: Double) -> Step {
        recent = recent.filter { now - $0.value <= window }
        guard let reading else { return recent.isEmpty ? .nothing : .check(recent.keys.sorted()) }
        defer { newest = reading }
        guard let previous = newest else { return .nothing }
        if reading != previous {
            guard reading > previous, reading - previous <= maxGap else {
                recent = [:]
                return .scanAll
            }
            for pid in (previous + 1)...reading { recent[pid] = now }
            if recent.count > maxRecent {
                for pid in recent.keys.sorted().prefix(recent.count - maxRecent) { recent[pid] = nil }
            }
        }
        return recent.isEmpty ? .nothing : .check(recent.keys.sorted())
    }
}
