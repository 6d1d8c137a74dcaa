/// The source's access units for the stream slots of one playlist, pulled in order through the same
/// `SourceReader` and producers the packager used; frames of other slots are skipped.
final class ExpectedAccessUnits {
    private let reader: SourceReader
    private let slots: Set<Int>
    private var queues: [Int: [AccessUnit]] = [:]
    private var heads: [Int: Int] = [:]
    /// Access units handed out per slot.
    private(set) var delivered: [Int: Int] = [:]
    /// The plan the source was read with.
    let plan: StreamPlan

    /// The watermark variant handed out, when the source is read with `--watermark`: units of the
    /// other variant are skipped.
    private let variant: WatermarkVariant?

    init(reader: SourceReader, slots: [Int], plan: StreamPlan, variant: WatermarkVariant? = nil) {
        self.reader = reader
        self.slots = Set(slots)
        self.plan = plan
        self.variant = variant
    }

    /// The next access unit of `slot`, or nil when the source has no more.
    func next(_ slot: Int) throws(PackagingError) -> AccessUnit? {
        while heads[slot, default: 0] >= queues[slot, default: []].count {
            queues[slot] = []
            heads[slot] = 0
            var found = false
            while !found {
                guard let (other, unit) = try reader.next() else { return nil }
                guard slots.contains(other), unit.variant == nil || unit.variant == variant else { continue }
                queues[other, default: []].append(unit)
                found = other == slot
            }
        }
        let head = heads[slot, default: 0]
        let unit = queues[slot, default: []][head]
        heads[slot] = head + 1
        delivered[slot, default: 0] += 1
        return unit
    }

    /// Counts (and consumes) the access units of `slot` the output never asked for.
    func remaining(_ slot: Int) throws(PackagingError) -> Int {
        var count = 0
        while try next(slot) != nil { count += 1 }
        delivered[slot, default: 0] -= count
        return count
    }

    /// How the output's stream in `slot` compares with the source.
    func comparison(_ slot: Int) -> String {
        let planned = plan.streams[slot]
        if let variant, !planned.codec.isAudio {
            return "against a deterministic libx264 re-encode of source stream \(planned.source.index) with variant "
                + "\(variant.rawValue.uppercased())'s watermark: checks the packaging bit for bit, not the encoder's fidelity"
        }
        switch planned.handling {
        case .transcodeToAAC:
            return "against a deterministic AAC-LC re-encode of source stream \(planned.source.index) "
                + "(\(planned.source.codecName)): checks the packaging bit for bit, not the encoder's fidelity"
        case .encodeStill:
            return "against a deterministic H.264 re-encode of the still image: checks the packaging bit for bit"
        default:
            return "bit for bit with source stream \(planned.source.index) (\(planned.source.codecName))"
        }
    }
}

@available(*, unavailable, message: "it owns a SourceReader")
extension ExpectedAccessUnits: Sendable {}
