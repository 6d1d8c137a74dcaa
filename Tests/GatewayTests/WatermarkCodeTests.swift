import Foundation
import ProcessTestSupport
import Testing

@testable import Gateway

/// The session watermark's code, its keyed spreading over segments, and the decoder the detector uses.
@Suite struct WatermarkCodeTests {
    static let watermark = SessionWatermark(key: Array(repeating: 7, count: 31) + [9])

    @Test func theGeneratorHasTheDesignedRootsAndDividesXToThe63MinusOne() {
        let field = GaloisField64()
        let generator = WatermarkCode.generator
        #expect(63 - generator.leadingZeroBitCount == WatermarkCode.checkBits)
        // α¹ … α¹⁰ are roots (designed distance 11), α¹¹ is not.
        for exponent in 1...10 { #expect(field.evaluate(generator, at: field.power(exponent)) == 0, "α^\(exponent)") }
        #expect(field.evaluate(generator, at: field.power(11)) != 0)
        // x⁶³ − 1 modulo the generator is zero: the code is cyclic of length 63.
        var rest: [UInt8] = Array(repeating: 0, count: 64)
        rest[0] = 1
        rest[63] = 1
        for degree in stride(from: 63, through: WatermarkCode.checkBits, by: -1) where rest[degree] == 1 {
            for bit in 0...WatermarkCode.checkBits where generator >> UInt64(bit) & 1 == 1 {
                rest[degree - WatermarkCode.checkBits + bit] ^= 1
            }
        }
        #expect(rest.allSatisfy { $0 == 0 })
    }

    @Test func codewordsAreSystematicEvenAndAtLeastTwelveApart() {
        var generator = SplitMix(seed: 14)
        var messages: [UInt64] = (0..<36).map { 1 << UInt64($0) }
        for i in 0..<36 { for j in (i + 1)..<36 { messages.append(1 << UInt64(i) | 1 << UInt64(j)) } }
        for _ in 0..<20_000 { messages.append(generator.next() & (1 << 36 - 1)) }
        var lightest = 64
        for message in messages where message != 0 {
            let codeword = WatermarkCode.encode(message)
            #expect(codeword >> 27 & (1 << 36 - 1) == message)
            #expect(codeword.nonzeroBitCount % 2 == 0)
            #expect(WatermarkCode.remainder(codeword & (1 << 63 - 1)) == 0)
            // The code is linear, so its minimum distance is its lightest nonzero codeword.
            lightest = min(lightest, codeword.nonzeroBitCount)
        }
        #expect(lightest == WatermarkCode.minimumDistance)
        #expect(WatermarkCode.encode(0) == 0)
        let (a, b) = (generator.next() & (1 << 36 - 1), generator.next() & (1 << 36 - 1))
        #expect(WatermarkCode.encode(a) ^ WatermarkCode.encode(b) == WatermarkCode.encode(a ^ b))
    }

    @Test func permutationsAreKeyedByAssetRoundAndKey() {
        let watermark = Self.watermark
        let first = watermark.permutation(asset: "clip", round: 0)
        #expect(first.sorted() == Array(0..<64))
        #expect(first != Array(0..<64))
        #expect(watermark.permutation(asset: "clip", round: 1) != first)
        #expect(watermark.permutation(asset: "clap", round: 0) != first)
        #expect(SessionWatermark(key: Array(repeating: 8, count: 32)).permutation(asset: "clip", round: 0) != first)
        #expect(watermark.permutation(asset: "clip", round: 0) == first)
        // Segment i carries the codeword bit its round's permutation names.
        let codeword = watermark.codeword(session: "s1")
        for index in 0..<200 {
            let position = watermark.permutation(asset: "clip", round: index / 64)[index % 64]
            #expect(watermark.position(asset: "clip", segment: index) == position)
            #expect(
                watermark.variant(session: "s1", asset: "clip", segment: index)
                    == WatermarkVariant(bit: codeword >> UInt64(position) & 1 == 1))
        }
    }

    @Test func tagsDifferPerSessionSegmentVariantAndKey() {
        let watermark = Self.watermark
        let tag = watermark.tag(session: "s1", rendition: "video.m3u8", segment: 3, variant: .a)
        #expect(tag.utf8.count == 22)
        #expect(tag.utf8.allSatisfy(Identifier.isIDByte))
        let others = [
            watermark.tag(session: "s2", rendition: "video.m3u8", segment: 3, variant: .a),
            watermark.tag(session: "s1", rendition: "video2.m3u8", segment: 3, variant: .a),
            watermark.tag(session: "s1", rendition: "video.m3u8", segment: 4, variant: .a),
            watermark.tag(session: "s1", rendition: "video.m3u8", segment: 3, variant: .b),
            SessionWatermark(key: Array(repeating: 8, count: 32)).tag(
                session: "s1", rendition: "video.m3u8", segment: 3, variant: .a),
        ]
        #expect(Set(others + [tag]).count == 6)
    }

    /// Scores as a copy served to `session` would give them: ±1 by its variants, `flipped` of them wrong.
    static func scores(session: String, segments: Int, flipped: Set<Int> = []) -> [Int: Double] {
        var scores: [Int: Double] = [:]
        for index in 0..<segments {
            let a = watermark.variant(session: session, asset: "clip", segment: index) == .a
            scores[index] = (a != flipped.contains(index) ? 1 : -1) * (0.4 + Double(index % 5) / 10)
        }
        return scores
    }

    static let candidates = (0..<1000).map { "session-\($0)" }

    @Test func aCleanCopyNamesItsSessionAmongAThousand() {
        let decoder = WatermarkDecoder(watermark: Self.watermark)
        let result = decoder.identify(
            scores: Self.scores(session: "session-417", segments: 64), asset: "clip", candidates: Self.candidates)
        #expect(result.session == "session-417")
        #expect(result.segments == 64 && result.bitsRead == 64 && result.bitErrorRate == 0)
        #expect(result.falseMatchProbability < 1e-15)
        #expect(result.enoughMaterial)
    }

    @Test func aCopyWithAFifthOfItsBitsFlippedStillNamesItsSession() {
        let decoder = WatermarkDecoder(watermark: Self.watermark)
        var generator = SplitMix(seed: 20)
        for (session, segments) in [("session-3", 64), ("session-999", 64), ("session-500", 192)] {
            var flipped = Set<Int>()
            while flipped.count < segments / 5 { flipped.insert(Int(generator.next() % UInt64(segments))) }
            let result = decoder.identify(
                scores: Self.scores(session: session, segments: segments, flipped: flipped), asset: "clip",
                candidates: Self.candidates)
            #expect(result.session == session, "\(result)")
            #expect(result.bitErrorRate > 0.1 && result.bitErrorRate < 0.3, "\(result)")
            #expect(result.falseMatchProbability < decoder.threshold, "\(result)")
        }
    }

    @Test func randomScoresMatchNoSession() {
        let decoder = WatermarkDecoder(watermark: Self.watermark)
        var generator = SplitMix(seed: 99)
        for _ in 0..<5 {
            var scores: [Int: Double] = [:]
            for index in 0..<64 { scores[index] = Double(generator.next() % 2001) / 1000 - 1 }
            let result = decoder.identify(scores: scores, asset: "clip", candidates: Self.candidates)
            #expect(result.session == nil, "\(result)")
            #expect(result.bestCandidate != nil)
            #expect(result.falseMatchProbability > decoder.threshold, "\(result)")
        }
        // The right scores read under another asset's permutation name nobody either.
        let elsewhere = decoder.identify(
            scores: Self.scores(session: "session-417", segments: 64), asset: "other", candidates: Self.candidates)
        #expect(elsewhere.session == nil, "\(elsewhere)")
    }

    /// Two sessions' copies averaged: where their variants agree the score keeps its size, where they
    /// differ the marks cancel and only noise is left. The decoder names one of the two or nobody, never a
    /// third session. For the first pair (codewords 34 or more bits apart, this noise), counting agreeing
    /// bits would name nobody among a thousand, and the soft bound names one of them.
    @Test func anAverageOfTwoSessionsCopiesNamesOneOfThemOrNobody() throws {
        let decoder = WatermarkDecoder(watermark: Self.watermark)
        var generator = SplitMix(seed: 7)
        for first in ["session-10", "session-250"] {
            let second = try #require(
                Self.candidates.first {
                    (Self.watermark.codeword(session: first) ^ Self.watermark.codeword(session: $0))
                        .nonzeroBitCount >= 34
                })
            let a = Self.scores(session: first, segments: 64)
            let b = Self.scores(session: second, segments: 64)
            var averaged: [Int: Double] = [:]
            for index in 0..<64 {
                let noise = (Double(generator.next() % 2001) / 1000 - 1) * 0.05
                averaged[index] = (a[index]! + b[index]!) / 2 + noise
            }
            let result = decoder.identify(scores: averaged, asset: "clip", candidates: Self.candidates)
            #expect(result.session == nil || [first, second].contains(result.session!), "\(result)")
            #expect([first, second].contains(result.bestCandidate ?? ""), "\(result)")
            // Neither colluder among the candidates: nobody is named.
            let others = Self.candidates.filter { $0 != first && $0 != second }
            let framed = decoder.identify(scores: averaged, asset: "clip", candidates: others)
            #expect(framed.session == nil, "\(framed)")
            guard first == "session-10" else { continue }
            #expect(result.session != nil && result.falseMatchProbability < decoder.threshold, "\(result)")
            let agreements = Int((Double(result.bitsRead) * (1 - result.bitErrorRate)).rounded())
            let hardOnly =
                Double(Self.candidates.count)
                * WatermarkDecoder.binomialTail(trials: result.bitsRead, atLeast: agreements)
            #expect(hardOnly > decoder.threshold, "\(hardOnly) \(result)")
        }
    }

    @Test func correlationTailIsHoeffdingsBound() {
        #expect(WatermarkDecoder.correlationTail(0, energy: 4) == 1)
        #expect(WatermarkDecoder.correlationTail(-3, energy: 4) == 1)
        #expect(WatermarkDecoder.correlationTail(2, energy: 0) == 1)
        #expect(abs(WatermarkDecoder.correlationTail(4, energy: 2) - exp(-4)) < 1e-15)
    }

    @Test func tooFewSegmentsAreNotEnoughMaterial() {
        let decoder = WatermarkDecoder(watermark: Self.watermark)
        let few = decoder.identify(
            scores: Self.scores(session: "session-1", segments: 10), asset: "clip", candidates: Self.candidates)
        #expect(!few.enoughMaterial && few.session == nil && few.segments == 10)
        let none = decoder.identify(scores: [:], asset: "clip", candidates: Self.candidates)
        #expect(none.session == nil && none.bitsRead == 0 && none.falseMatchProbability == 1)
        #expect(
            decoder.identify(scores: [0: .nan, -1: 1], asset: "clip", candidates: Self.candidates).segments == 0)
    }

    @Test func theBinomialTailIsExact() {
        #expect(WatermarkDecoder.binomialTail(trials: 4, atLeast: 3) == 5.0 / 16)
        #expect(WatermarkDecoder.binomialTail(trials: 64, atLeast: 0) == 1)
        #expect(WatermarkDecoder.binomialTail(trials: 64, atLeast: 65) == 0)
        #expect(abs(WatermarkDecoder.binomialTail(trials: 64, atLeast: 64) - pow(2, -64)) < 1e-30)
    }
}
