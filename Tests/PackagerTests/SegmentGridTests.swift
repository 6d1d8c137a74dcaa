import Testing

@testable import Packager

/// `SegmentGrid.end`: where an audio segment ends, for starts on the grid, a frame past it, a priming
/// frame before the origin, a late start and a start far before the origin (90 kHz, 2 s target).
@Suite struct SegmentGridTests {
    static let origin: Int64 = 126_000
    static let target: Int64 = 180_000

    @Test(arguments: [
        (origin, origin + target),  // the first segment
        (origin - 2_090, origin + target),  // a 44.1 kHz priming frame before the first picture
        (origin + target - 100, origin + 2 * target),  // cut a tolerance short of a line
        (origin + target + 2_089, origin + 2 * target),  // cut a frame past a line
        (origin + 7 * target + 1_920, origin + 8 * target),  // no drift, however far on
        (origin + target / 2 + 1, origin + 2 * target),  // a late start folds into the next line's segment
        (origin - 5 * 90_000, origin - target),  // audio long before the video: whole lines before it
    ])
    func endsAtTheFirstLineMoreThanHalfATargetOn(_ start: Int64, _ end: Int64) {
        let computed = SegmentGrid.end(segmentStart: start, origin: Self.origin, target: Self.target)
        #expect(computed == end, "a segment from \(start) ends at \(computed)")
        #expect(computed - start > Self.target / 2 && computed - start <= Self.target * 3 / 2)
    }
}
