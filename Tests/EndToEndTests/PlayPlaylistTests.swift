import Foundation
import Testing

/// The player takes what ffplay takes: an HLS playlist, here the packager's own clear output.
@Suite struct PlayPlaylistTests {
    @Test func playsAndMasksAnHLSPlaylist() throws {
        let directory = try TemporaryDirectory()
        let hls = directory.path("hls")
        let packaged = try package(fixture("clip.mp4"), hls, ["--encryption", "none", "--segment-duration", "2"])
        #expect(packaged.status == 0, "\(packaged.stderr)")
        let playlist = hls + "/master.m3u8"
        let out = directory.path("out.mkv")
        let result = try guardPlay([playlist, "--simulate-recording=2-5", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        let video = try decodeVideo(out)
        let reference = try decodeVideo(playlist)
        #expect(reference.count == 300)
        // Times are media seconds from the container's start, as the player's schedule counts them.
        let masked = Intervals(ranges: [(2, 5)])
        #expect(checkMasking(output: video, reference: reference, masked: masked, isMasked: isBlack) == nil)
    }
}
