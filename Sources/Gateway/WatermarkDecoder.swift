import FoundationEssentials
import Glibc

/// What a copy's watermark says: the session it names, or none, and how sure that is.
public struct WatermarkIdentification: Sendable, Equatable {
    /// The session the copy came from, or nil when no candidate matches well enough (or there was
    /// too little to read).
    public let session: String?
    /// The candidate that fitted best, matched or not.
    public let bestCandidate: String?
    /// Segments with a score.
    public let segments: Int
    /// Codeword bits the scores decided (a bit whose scores sum to zero is not read).
    public let bitsRead: Int
    /// The best candidate's share of read bits that disagree with the copy.
    public let bitErrorRate: Double
    /// The chance that a copy carrying no candidate's codeword agrees with one of them this well, a union
    /// bound over the candidates (their number times the chance for one), at most 1. The chance for one is
    /// twice the smaller of two bounds: the binomial tail P[Bin(bitsRead, ½) ≥ agreements] of the hard
    /// decisions, and Hoeffding's bound exp(−C² / 2Σs²) on the soft correlation C of the bits' scores s
    /// (which a segment whose mark cancelled, as in an average of two sessions' copies, barely moves).
    public let falseMatchProbability: Double
    /// False when fewer than `WatermarkDecoder.minimumBits` bits were read.
    public let enoughMaterial: Bool
    /// The candidates compared.
    public var candidates = 0
    /// The candidate that fitted second best, and its bit error rate and false-match probability: how
    /// near the best wrong session came.
    public var runnerUp: String? = nil
    public var runnerUpBitErrorRate = 0.5
    public var runnerUpFalseMatchProbability = 1.0
    /// Candidates other than the best whose bit error rate is at most 0.25.
    public var closeCandidates = 0
}

/// Names the session behind a copy from per-segment soft scores: it de-permutes the scores onto the
/// asset's codeword positions (summing the repeats), correlates them with each candidate session's
/// codeword (soft decisions: maximum likelihood among the candidates), and accepts the best only when
/// its false-match probability is at most `threshold`.
///
/// Two sessions' copies averaged cancel the mark wherever their codewords differ: those bits read as
/// noise near zero. Counting agreeing bits treats them as coin flips; the soft bound weighs each bit by
/// its score, so it can name one of the two where the count cannot. It never names a third: for a
/// session whose codeword the copy does not carry, both bounds hold whatever the scores.
public struct WatermarkDecoder: Sendable {
    /// The watermark the sessions were served under.
    public let watermark: SessionWatermark
    /// The false-match probability above which the decoder says "no match".
    public let threshold: Double
    /// The fewest read bits for a decision.
    public static let minimumBits = 24

    /// A decoder under `watermark` that accepts a match up to `threshold`.
    public init(watermark: SessionWatermark, threshold: Double = 0.01) {
        self.watermark = watermark
        self.threshold = threshold
    }

    /// The session among `candidates` (session IDs of `asset`) whose codeword the scores spell.
    /// `scores` maps a segment index to a score in [-1, 1], positive for variant A; values outside are
    /// clamped and non-finite ones ignored.
    public func identify(scores: [Int: Double], asset: String, candidates: [String]) -> WatermarkIdentification {
        var soft = [Double](repeating: 0, count: WatermarkCode.length)
        var segments = 0
        var permutations: [Int: [Int]] = [:]
        for (index, score) in scores where index >= 0 && score.isFinite {
            let round = index / WatermarkCode.length
            if permutations[round] == nil { permutations[round] = watermark.permutation(asset: asset, round: round) }
            // Positive scores are A, bit 0: soft[p] > 0 says bit p is 0.
            soft[permutations[round]![index % WatermarkCode.length]] += min(1, max(-1, score))
            segments += 1
        }
        let read = soft.indices.filter { soft[$0] != 0 }
        var best: (session: String, correlation: Double, agreements: Int)?
        var second: (session: String, correlation: Double, agreements: Int)?
        var close = 0
        for candidate in candidates {
            let codeword = watermark.codeword(session: candidate)
            var correlation = 0.0
            var agreements = 0
            for position in read {
                let sign = codeword >> UInt64(position) & 1 == 0 ? 1.0 : -1.0
                correlation += sign * soft[position]
                if sign * soft[position] > 0 { agreements += 1 }
            }
            if 4 * (read.count - agreements) <= read.count { close += 1 }
            if best == nil || correlation > best!.correlation {
                second = best
                best = (candidate, correlation, agreements)
            } else if second == nil || correlation > second!.correlation {
                second = (candidate, correlation, agreements)
            }
        }
        let enough = read.count >= Self.minimumBits
        let energy = read.reduce(0.0) { $0 + soft[$1] * soft[$1] }
        guard let best, !read.isEmpty else {
            return WatermarkIdentification(
                session: nil, bestCandidate: nil, segments: segments, bitsRead: read.count, bitErrorRate: 0.5,
                falseMatchProbability: 1, enoughMaterial: enough)
        }
        func falseMatch(_ candidate: (session: String, correlation: Double, agreements: Int)) -> Double {
            let hard = Self.binomialTail(trials: read.count, atLeast: candidate.agreements)
            let soft = Self.correlationTail(candidate.correlation, energy: energy)
            return min(1, Double(candidates.count) * 2 * min(hard, soft))
        }
        var found = WatermarkIdentification(
            session: enough && falseMatch(best) <= threshold ? best.session : nil,
            bestCandidate: best.session, segments: segments, bitsRead: read.count,
            bitErrorRate: Double(read.count - best.agreements) / Double(read.count),
            falseMatchProbability: falseMatch(best), enoughMaterial: enough)
        found.candidates = candidates.count
        found.closeCandidates = max(0, close - (4 * (read.count - best.agreements) <= read.count ? 1 : 0))
        if let second {
            found.runnerUp = second.session
            found.runnerUpBitErrorRate = Double(read.count - second.agreements) / Double(read.count)
            found.runnerUpFalseMatchProbability = falseMatch(second)
        }
        return found
    }

    /// Hoeffding's bound on P[Σ sᵢεᵢ ≥ correlation] for fair random signs εᵢ and scores whose squares sum
    /// to `energy`: exp(−correlation² / 2·energy), and 1 for a correlation of 0 or less.
    static func correlationTail(_ correlation: Double, energy: Double) -> Double {
        guard correlation > 0, energy > 0 else { return 1 }
        return exp(-correlation * correlation / (2 * energy))
    }

    /// P[Bin(trials, ½) ≥ atLeast], exact for up to 64 trials (binomial coefficients in Double).
    static func binomialTail(trials: Int, atLeast: Int) -> Double {
        guard atLeast > 0 else { return 1 }
        guard atLeast <= trials else { return 0 }
        var coefficient = 1.0
        var sum = 0.0
        for successes in 0...trials {
            if successes >= atLeast { sum += coefficient }
            coefficient = coefficient * Double(trials - successes) / Double(successes + 1)
        }
        return sum / pow(2, Double(trials))
    }
}
