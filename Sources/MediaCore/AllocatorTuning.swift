import CFFmpeg

/// glibc's allocator settings for a long demuxing run.
public enum AllocatorTuning {
    /// The mmap threshold `fixMmapThreshold()` sets: glibc's own starting value.
    public static let mmapThreshold = 128 * 1024

    /// Fixes glibc's mmap threshold at `mmapThreshold`. By default glibc raises the threshold to the
    /// size of each large block freed (demuxer probe buffers, big frames), after which blocks of that
    /// size come from the heap, whose fragmentation then grows with the input's length; a fixed
    /// threshold keeps each large block a mapping of its own, returned whole when freed. Process-wide
    /// and idempotent.
    public static func fixMmapThreshold() {
        _ = cffmpeg_set_mmap_threshold(Int32(mmapThreshold))
    }
}
