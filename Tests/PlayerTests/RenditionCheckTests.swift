import Foundation
import Testing

@testable import Player

@Suite struct RenditionCheckTests {
    @Test(arguments: [
        ("#EXTM3U\n#EXT-X-ENDLIST\n", 0),
        ("#EXTM3U\n#EXTINF:2,\na.ts\n#EXTINF:2,\nb.ts\n#EXT-X-ENDLIST\n", 2),
        // A URI line with no #EXTINF before it is not a segment, nor is a second URI after one #EXTINF.
        ("#EXTM3U\nstray.ts\n#EXTINF:2,\na.ts\nb.ts\n", 1),
        ("\u{FEFF}#EXTM3U\r\n#EXTINF:2,\r\n\r\na.ts\r\n", 1),
        ("#EXTM3U\n#EXT-X-TA={garbage\n\u{1}\u{2}binary\n", 0),
    ])
    func countsSegmentsAsFFmpegDoes(playlist: String, segments: Int) {
        #expect(RenditionCheck.segmentCount(in: playlist) == segments)
    }

    @Test func readsQuotedAndPlainAttributes() {
        let line = #"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a,b",NAME="x=y",DEFAULT=YES,URI="audio-1.m3u8""#
        #expect(RenditionCheck.attribute("URI", in: line) == "audio-1.m3u8")
        #expect(RenditionCheck.attribute("GROUP-ID", in: line) == "a,b")
        #expect(RenditionCheck.attribute("NAME", in: line) == "x=y")
        #expect(RenditionCheck.attribute("DEFAULT", in: line) == "YES")
        #expect(RenditionCheck.attribute("CHANNELS", in: line) == nil)
        #expect(RenditionCheck.attribute("URI", in: "#EXT-X-MEDIA") == nil)
    }

    @Test func findsTheEmptyRenditionAndOnlyIt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rendition-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        let full = "#EXTM3U\n#EXTINF:2,\na.ts\n#EXT-X-ENDLIST\n"
        try write("full.m3u8", full)
        try write("sub/empty.m3u8", "#EXTM3U\n#EXT-X-ENDLIST\n")
        try write("garbage.m3u8", "not a playlist")
        try write(
            "master.m3u8",
            """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="one",URI="full.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="two",URI="missing.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="three",URI="garbage.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="four",URI="https://example.com/empty.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="five",URI="sub/empty.m3u8?token=1"
            #EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO="a"
            full.m3u8

            """)
        #expect(RenditionCheck.emptyRendition(inMasterAt: directory + "/master.m3u8") == "sub/empty.m3u8?token=1")
        try write("sub/empty.m3u8", full)
        #expect(RenditionCheck.emptyRendition(inMasterAt: directory + "/master.m3u8") == nil)
        // A media playlist (no renditions) and a URL are not looked at.
        #expect(RenditionCheck.emptyRendition(inMasterAt: directory + "/full.m3u8") == nil)
        #expect(RenditionCheck.emptyRendition(inMasterAt: "http://127.0.0.1:1/master.m3u8") == nil)
    }
}
