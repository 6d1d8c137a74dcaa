import FoundationEssentials

/// Where a node is in a table of events that every node sharing the store reads by its identity
/// column (`session_events.seq`, `asset_events.seq`).
///
/// PostgreSQL gives a row its number when the row is inserted, but transactions commit in their own
/// order: one that took 10 can commit after one that took 11. A reader that went on from 11 would
/// never read 10, and a revocation in it would never reach this node. So the cursor keeps each number
/// it passed without reading as a gap and asks for the gaps again with every read. It gives a gap up
/// after `patience` (the number of a transaction that rolled back is never committed), and keeps at
/// most `maxGaps`, the oldest going first. Each number is admitted once.
struct EventCursor: Sendable {
    /// The newest number read, or where reading started.
    private(set) var newest: Int64
    /// Numbers below `newest` not read yet, with when each was first passed.
    private var gaps: [Int64: Date] = [:]
    let patience: TimeInterval
    let maxGaps: Int

    init(after start: Int64, patience: TimeInterval = 30, maxGaps: Int = 1000) {
        newest = start
        self.patience = patience
        self.maxGaps = maxGaps
    }

    /// How many numbers up to the newest a node that starts reads again (`init(startingAt:…)`).
    static let startWindow: Int64 = 1000

    /// A cursor for a node that starts reading at `latest`, the newest number when it started, given
    /// `recent`, the numbers of the rows among the `window` numbers up to it. A number in the window
    /// without a row is a gap from the start, since its transaction may commit after the node read
    /// the state it starts from; a row after `latest` is left to be read.
    init(
        startingAt latest: Int64, recent: [Int64], window: Int64, at now: Date, patience: TimeInterval = 30,
        maxGaps: Int = 1000
    ) {
        self.init(after: max(0, latest - window), patience: patience, maxGaps: maxGaps)
        for seq in recent.sorted() where seq <= latest { admit(seq, at: now) }
        if newest < latest { admit(latest, at: now) }
    }

    /// The gaps to ask for again, in order.
    var missing: [Int64] { gaps.keys.sorted() }

    /// Whether the row numbered `seq` has not been admitted yet.
    func isNew(_ seq: Int64) -> Bool { seq > newest || gaps[seq] != nil }

    /// Admits the row numbered `seq` (read at `now`) and notes the numbers it passes as gaps; false
    /// when it was admitted before or given up.
    @discardableResult
    mutating func admit(_ seq: Int64, at now: Date) -> Bool {
        guard seq > newest else { return gaps.removeValue(forKey: seq) != nil }
        // Only the last `maxGaps` numbers passed can still be tracked.
        for passed in max(newest + 1, seq - Int64(maxGaps))..<seq { gaps[passed] = now }
        newest = seq
        if gaps.count > maxGaps {
            for oldest in gaps.keys.sorted().prefix(gaps.count - maxGaps) { gaps[oldest] = nil }
        }
        return true
    }

    /// Gives up the gaps first passed `patience` or longer before `now`.
    mutating func expire(at now: Date) {
        gaps = gaps.filter { now.timeIntervalSince($0.value) < patience }
    }
}
