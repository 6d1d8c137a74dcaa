import ControlAPI
import Foundation
import Gateway
import HTTPServer
import Testing

/// A CMAF asset as `guard-play package --container fmp4` leaves it: init segments and `.m4s` segments
/// served cacheable with ranges, playlists rewritten per session with the EXT-X-MAP left to the
/// (public) init segment, and the DASH manifest served as such.
@Suite struct FragmentedAssetTests {
    static let kid = "0f0e0d0c0b0a09080706050403020100"

    func importCMAFAsset(_ api: APIFixture) throws {
        let scratch = api.fixture.scratch
        _ = try scratch.write(
            "imports/cmaf/master.m3u8",
            "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                + "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",LANGUAGE=\"en\",NAME=\"English\",URI=\"audio-1.m3u8\"\n"
                + "#EXT-X-STREAM-INF:BANDWIDTH=549000,CODECS=\"avc1.64001e,mp4a.40.2\",AUDIO=\"audio\"\nvideo.m3u8\n")
        for name in ["video", "audio-1"] {
            _ = try scratch.write(
                "imports/cmaf/\(name).m3u8",
                "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:6\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                    + "#EXT-X-MAP:URI=\"\(name)_init.mp4\"\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://\(Self.kid)\"\n"
                    + "#EXTINF:6.000000,\n\(name)_00000.m4s\n#EXT-X-ENDLIST\n")
            _ = try scratch.write("imports/cmaf/\(name)_init.mp4", String(repeating: "I", count: 700))
            _ = try scratch.write("imports/cmaf/\(name)_00000.m4s", String(repeating: "M", count: 4_000))
        }
        _ = try scratch.write("imports/cmaf/manifest.mpd", "<?xml version=\"1.0\"?>\n<MPD type=\"static\"/>\n")
        _ = try api.gateway.importAsset(
            id: "cmaf", directory: scratch.path + "/imports/cmaf",
            keys: [ImportedKey(kid: Self.kid, key: Array(repeating: 9, count: 16), uri: nil)],
            denyKeysWhileCapturing: false)
    }

    @Test func servesInitSegmentsSegmentsWithRangesAndRewrittenPlaylists() throws {
        let api = try APIFixture()
        try importCMAFAsset(api)
        let (_, token) = try api.gateway.createSession(asset: "cmaf", ttl: nil)
        let master = String(decoding: api.call("GET", "/v1/hls/cmaf/master.m3u8?token=\(token)").bytes, as: UTF8.self)
        #expect(master.contains("URI=\"audio-1.m3u8?token=\(token)\"") && master.contains("video.m3u8?token=\(token)"))
        let video = api.call("GET", "/v1/hls/cmaf/video.m3u8?token=\(token)")
        let text = String(decoding: video.bytes, as: UTF8.self)
        #expect(video.status == 200 && text.contains("/v1/keys/\(Self.kid)?token=\(token)"), "\(text)")
        #expect(text.contains("#EXT-X-MAP:URI=\"video_init.mp4\"\n"), "the init segment is public and cacheable")
        #expect(text.contains("\nvideo_00000.m4s\n"))

        let initSegment = api.call("GET", "/v1/hls/cmaf/video_init.mp4", headers: [("Range", "bytes=0-99")])
        #expect(initSegment.status == 206 && initSegment.headers["Content-Range"] == "bytes 0-99/700")
        #expect(initSegment.headers["Content-Type"] == "video/mp4")
        let segment = api.call("GET", "/v1/hls/cmaf/audio-1_00000.m4s", headers: [("Range", "bytes=3000-")])
        #expect(segment.status == 206 && segment.headers["Content-Range"] == "bytes 3000-3999/4000")
        #expect(segment.headers["Content-Type"] == "video/iso.segment")
        #expect(segment.headers["Cache-Control"] == "public, max-age=31536000, immutable")
        let manifest = api.call("GET", "/v1/hls/cmaf/manifest.mpd")
        #expect(manifest.status == 200 && manifest.headers["Content-Type"] == "application/dash+xml")
    }
}
