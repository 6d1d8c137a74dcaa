/// A source whose reports are a pure function of media time, such as the simulated recording schedule.
///
/// The monitor asks it what it reports at any instant and when it next reports, so a gate can switch at
/// the exact sample where the schedule says.
public protocol ScheduledCaptureSource: Sendable {
    /// The source's name in events.
    var name: String { get }
    /// The report in force at media time `time`, as if the source had been reporting since the start.
    func report(at time: Double) -> CaptureReport
    /// The first media time strictly after `time` at which the report may change, or nil when never.
    func nextChange(after time: Double) -> Double?
}

/// The simulated screen recording of `--simulate-recording[=SPEC]`: capturing inside intervals of media
/// time, clear outside.
public struct SimulatedSchedule: ScheduledCaptureSource, Hashable {
    /// A stretch of recording, `start..<end` in media seconds; an open end records to the end.
    public struct Interval: Sendable, Hashable {
        /// Where recording starts.
        public var start: Double
        /// Where it stops, or nil for never.
        public var end: Double?

        /// Creates an interval.
        public init(start: Double, end: Double?) {
            self.start = start
            self.end = end
        }

        /// True when `time` is inside.
        public func contains(_ time: Double) -> Bool { time >= start && (end.map { time < $0 } ?? true) }
    }

    /// The two shapes a spec takes.
    public enum Pattern: Sendable, Hashable {
        /// Fixed intervals, sorted and apart.
        case intervals([Interval])
        /// Clear for `period` seconds, then recording for `period`, and so on.
        case every(period: Double)
    }

    /// The shortest `every:` period, as for `--poll-interval`: a shorter one would switch the state every few
    /// samples, and 1e-300 would never let media time move past the next change.
    public static let minimumPeriod = 0.01
    /// The largest number of seconds a spec may hold (about 31 years of media, as the REST seek allows):
    /// far beyond any media, and small enough that sums and products of media times stay exact enough.
    public static let maximumSeconds = 1e9

    /// The pattern this schedule follows.
    public let pattern: Pattern
    /// The spec as the user wrote it, for reasons in events.
    public let spec: String
    public let name = "simulated"

    /// Creates a schedule from a pattern.
    public init(pattern: Pattern, spec: String) {
        self.pattern = pattern
        self.spec = spec
    }

    /// Parses a `--simulate-recording` spec: empty (the whole playback), `A-B,C-` intervals in media
    /// seconds, or `every:N` (toggles every N seconds, starting clear).
    public init(parsing spec: String) throws(ScheduleError) {
        self.spec = spec
        let text = spec.trimmingWhitespace
        if text.isEmpty {
            pattern = .intervals([Interval(start: 0, end: nil)])
            return
        }
        if text.hasPrefix("every:") {
            let value = String(text.dropFirst("every:".count))
            guard let period = Double(value), period.isFinite,
                (Self.minimumPeriod...Self.maximumSeconds).contains(period)
            else {
                throw ScheduleError(
                    spec: spec, problem: "'every:' needs a period from 0.01 to 1e9 seconds, not '\(value)'")
            }
            pattern = .every(period: period)
            return
        }
        var intervals: [Interval] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = String(part)
            guard !item.isEmpty else { throw ScheduleError(spec: spec, problem: "empty interval between commas") }
            let bounds = item.split(separator: "-", maxSplits: 2, omittingEmptySubsequences: false)
            guard bounds.count == 2 else {
                throw ScheduleError(spec: spec, problem: "'\(item)' is not an interval START-END or START-")
            }
            guard let parsedStart = Self.seconds(bounds[0]) else {
                throw ScheduleError(spec: spec, problem: "'\(bounds[0])' in '\(item)' is not a number of seconds")
            }
            let start = try Self.bounded(parsedStart, bounds[0], in: item, spec: spec)
            var end: Double? = nil
            if !bounds[1].isEmpty {
                guard let value = Self.seconds(bounds[1]) else {
                    throw ScheduleError(
                        spec: spec, problem: "'\(bounds[1])' in '\(item)' is not a number of seconds")
                }
                guard value > start else {
                    throw ScheduleError(spec: spec, problem: "interval '\(item)' ends before it starts")
                }
                end = try Self.bounded(value, bounds[1], in: item, spec: spec)
            }
            if let previous = intervals.last {
                guard let previousEnd = previous.end else {
                    throw ScheduleError(spec: spec, problem: "open interval '\(previous.start)-' must come last")
                }
                guard start >= previousEnd else {
                    throw ScheduleError(
                        spec: spec, problem: "interval '\(item)' overlaps or precedes the one before it")
                }
            }
            intervals.append(Interval(start: start, end: end))
        }
        pattern = .intervals(intervals)
    }

    private static func seconds(_ text: Substring) -> Double? {
        guard !text.isEmpty, text.allSatisfy({ $0.isNumber || $0 == "." }), let value = Double(text), value.isFinite
        else { return nil }
        return value
    }

    private static func bounded(_ value: Double, _ text: Substring, in item: String, spec: String) throws(ScheduleError)
        -> Double
    {
        guard value <= maximumSeconds else {
            throw ScheduleError(spec: spec, problem: "'\(text)' in '\(item)' is more than 1e9 seconds")
        }
        return value
    }

    /// True when the schedule records at media time `time`.
    public func isRecording(at time: Double) -> Bool {
        switch pattern {
        case .intervals(let intervals):
            return intervals.contains { $0.contains(time) }
        case .every(let period):
            guard time >= 0 else { return false }
            // In floating point: an `Int` of the quotient would trap for media times far past any period.
            return (time / period).rounded(.down).truncatingRemainder(dividingBy: 2) == 1
        }
    }

    public func report(at time: Double) -> CaptureReport {
        let recording = isRecording(at: time)
        let reason = spec.isEmpty ? "simulated recording" : "simulated recording \(spec)"
        return CaptureReport(source: name, state: recording ? .capturing : .clear, reason: reason)
    }

    public func nextChange(after time: Double) -> Double? {
        switch pattern {
        case .intervals(let intervals):
            return intervals.flatMap { [$0.start, $0.end].compactMap { $0 } }.filter { $0 > time }.min()
        case .every(let period):
            let next = ((time / period).rounded(.down) + 1) * period
            // Far past the schedule (a container's timestamps can be anything) the product rounds back to
            // `time`; the next representable instant keeps the answer strictly later, so callers that step
            // from change to change always move on.
            return next > time ? next : time.nextUp
        }
    }
}

/// A malformed `--simulate-recording` or `--simulate-stall` spec.
public struct ScheduleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The spec as given.
    public let spec: String
    /// What is wrong with it.
    public let problem: String

    public var description: String { "invalid spec '\(spec)': \(problem)" }
}

/// A simulated detector that reports `clear` with a short lease, renews it every `period` seconds of media
/// time, and stops renewing after `stallAt`, as a crashed detector or a silent remote client would.
///
/// This is `--simulate-stall=T`: the last renewal is at the last multiple of `period` at or before T, and
/// the state turns `unknown` when its lease lapses (`T + lease` when T is a multiple of `period`), which
/// exercises the monitor's fail-closed path deterministically in media time.
public struct StalledHeartbeat: ScheduledCaptureSource, Hashable {
    /// Media time after which no renewal happens.
    public let stallAt: Double
    /// How long a renewal is believed.
    public let lease: Double
    /// Time between renewals.
    public let period: Double
    public let name = "heartbeat"

    /// Creates a heartbeat that stalls at `stallAt`.
    public init(stallAt: Double, lease: Double = 1, period: Double = 0.5) {
        self.stallAt = stallAt
        self.lease = lease
        self.period = period
    }

    /// Parses `--simulate-stall=T` (seconds of media time, from 0 to 1e9).
    public init(parsing spec: String) throws(ScheduleError) {
        guard let value = Double(spec.trimmingWhitespace), value.isFinite,
            (0...SimulatedSchedule.maximumSeconds).contains(value)
        else {
            throw ScheduleError(
                spec: spec, problem: "expected the media time in seconds (0 to 1e9) at which renewals stop")
        }
        self.init(stallAt: value)
    }

    /// The media time of the last renewal at or before `time`, or nil before the first.
    /// The source reports at 0 and then renews at every multiple of `period` up to `stallAt`.
    func lastRenewal(atOrBefore time: Double) -> Double {
        guard time > 0, stallAt > 0 else { return 0 }
        return (min(time, stallAt) / period).rounded(.down) * period
    }

    public func report(at time: Double) -> CaptureReport {
        let renewal = lastRenewal(atOrBefore: time)
        return CaptureReport(
            source: name, state: .clear, reason: "heartbeat (stalls at \(stallAt) s)", lease: .media(renewal + lease))
    }

    public func nextChange(after time: Double) -> Double? {
        let renewal = ((max(time, 0) / period).rounded(.down) + 1) * period
        let deadline = lastRenewal(atOrBefore: time) + lease
        let candidates = [renewal <= stallAt ? renewal : nil, deadline].compactMap { $0 }
        return candidates.filter { $0 > time }.min()
    }
}

extension String {
    var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
