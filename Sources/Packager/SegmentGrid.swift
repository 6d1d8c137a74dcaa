/// Where audio segments are cut: on a grid of the segment duration, not a segment duration past each
/// segment's start. A segment of whole frames (AAC's 1024 samples) overshoots the target a little, and
/// cut from each segment's start those overshoots add up (44.1 kHz: 20 ms every 2 s), so audio
/// boundaries drift off the video's and its key periods start apart from the video's; cut at the first
/// frame on or past each grid line, every boundary stays within a frame of the grid, on which
/// GOP-aligned video is cut too.
enum SegmentGrid {
    /// Where a segment that started at `segmentStart` ends (90 kHz): at the first line of the grid
    /// `origin + n·target` more than half a target past its start. The half target folds a start just
    /// before a line (an encoder's priming frame before the first picture, a track starting late) into
    /// that segment rather than leave a sliver of one.
    static func end(segmentStart: Int64, origin: Int64, target: Int64) -> Int64 {
        let offset = segmentStart + target / 2 - origin
        let line = offset / target - (offset % target < 0 ? 1 : 0)
        return origin + (line + 1) * target
    }
}
