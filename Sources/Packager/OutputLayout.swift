import MediaFormats

/// Which media playlists an output has and which stream slots (video first, then audio in input
/// order) each carries: video muxed with a single audio stream; several audio streams, or any audio
/// beside video in packed format, as renditions `audio-1`, `audio-2`…; a single audio-only stream as
/// `audio`. The packager writes this layout and the verifier expects it.
struct OutputLayout: Equatable {
    /// One media playlist.
    struct Playlist: Equatable {
        /// The base name: `video`, `audio` or `audio-N`.
        var name: String
        /// The slots it carries.
        var slots: [Int]
        /// True for an `EXT-X-MEDIA` audio rendition.
        var isRendition: Bool
    }

    var playlists: [Playlist]

    /// The layout for a plan with or without video and `audioCount` audio streams; `separateAudio`
    /// gives every audio stream its own playlist even beside video (packed audio cannot be muxed).
    init(hasVideo: Bool, audioCount: Int, separateAudio: Bool = false) {
        let audioSlots = Array((hasVideo ? 1 : 0)..<((hasVideo ? 1 : 0) + audioCount))
        if hasVideo && (audioCount == 0 || audioCount == 1 && !separateAudio) {
            playlists = [Playlist(name: "video", slots: [0] + audioSlots, isRendition: false)]
        } else if !hasVideo && audioCount == 1 {
            playlists = [Playlist(name: "audio", slots: audioSlots, isRendition: false)]
        } else {
            playlists = hasVideo ? [Playlist(name: "video", slots: [0], isRendition: false)] : []
            for (number, slot) in audioSlots.enumerated() {
                playlists.append(Playlist(name: "audio-\(number + 1)", slots: [slot], isRendition: true))
            }
        }
    }

    /// The PID of a slot's elementary stream in its TS: 0x100 for video, 0x101 for audio.
    static func pid(for codec: ElementaryCodec) -> UInt16 { codec.isAudio ? 0x101 : 0x100 }
}
