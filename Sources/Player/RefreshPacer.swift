public import Protection

/// The flicker's presentation clock: which phase the next refresh shows, when to present when the
/// renderer's vsync does not block (Xvfb has none), the refresh rate measured and the vsyncs missed.
///
/// The phase flips on every present, whatever the timing: after a missed vsync the screen still holds
/// the previous phase, so the next present must show the other one, never a phase worked out from the
/// clock. A new pair (a new mask) starts with every first phase. Pure: the window thread passes it times.
public struct RefreshPacer: Sendable {
    /// The refresh period the display reports (or 1/60 s when it reports none).
    public let period: Double
    /// The phase the next present shows.
    public private(set) var phase: FlickerPhase = .first
    /// Presents so far.
    public private(set) var presents = 0
    /// Refreshes that went by without a present of ours.
    public private(set) var missedVsyncs = 0
    private var first: Double?
    private var last: Double?
    private var deadline: Double?
    private var judged = false

    /// A pacer for a display that reports `refreshRate` Hz (0 or less: unknown, taken as 60).
    public init(refreshRate: Double) {
        period = 1 / (refreshRate > 0 ? refreshRate : 60)
    }

    /// True when the next present begins a new pair, so a new mask is due.
    public var startsPair: Bool { phase == .first }

    /// When the next present is due (nil: now).
    public var nextDeadline: Double? { deadline }

    /// Records a present that finished at `time` seconds and flips the phase.
    public mutating func presented(at time: Double) {
        if let last {
            let refreshes = ((time - last) / period).rounded()
            if refreshes > 1 { missedVsyncs += Int(refreshes) - 1 }
        } else {
            first = time
        }
        presents += 1
        last = time
        // Due one period after the previous deadline; a present that came late starts the grid again.
        let next = (deadline ?? time) + period
        deadline = next > time ? next : time + period
        phase = phase.opposite
    }

    /// Once the rate has been measured over about a second (at least 30 presents), and only once: the
    /// one-line warning when it is under 50 Hz, where the flicker itself is visible; nil otherwise.
    public mutating func lowRateWarning() -> String? {
        guard !judged, presents >= 30, let rate = measuredRate, Double(presents) >= rate else { return nil }
        judged = true
        guard rate < 50 else { return nil }
        return "the window refreshes at \(Int(rate.rounded())) Hz, under 50 Hz: the flicker will be visible"
    }

    /// Presents per second between the first and the last present; nil before there are two.
    public var measuredRate: Double? {
        guard let first, let last, presents > 1, last > first else { return nil }
        return Double(presents - 1) / (last - first)
    }
}
