import Foundation
import Testing

@testable import Player

@Suite struct PlaylistCheckTests {
    @Test(arguments: [
        ("#EXTM3U\n#EXT-X-ENDLIST\n", 0),
        ("#EXTM3U\n#EXTINF:2,\na.ts\n#EXTINF:2,\nb.ts\n#EXT-X-ENDLIST\n", 2),
        // A URI line with no #EXTINF before it is not a segment, nor is a second URI after one #EXTINF.
        ("#EXTM3U\nstray.ts\n#EXTINF:2,\na.ts\nb.ts\n", 1),
        ("\u{FEFF}#EXTM3U\r\n#EXTINF:2,\r\n\r\na.ts\r\n", 1),
        ("#EXTM3U\n#EXT-X-TA={garbage\n\u{1}\u{2}binary\n", 0),
    ])
    func countsSegmentsAsFFmpegDoes(playlist: String, segments: Int) {
        #expect(PlaylistCheck.Outline(playlist).segments == segments)
    }

    @Test func readsRenditionURIsWithQuotedCommasAndStrayWhitespace() {
        let master = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a,b",NAME="x=y",DEFAULT=YES,URI= "audio,1.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,URI="first.m3u8",URI="second.m3u8"
            #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="s"
            """
        #expect(PlaylistCheck.Outline(master).named.map(\.uri) == ["audio,1.m3u8", "second.m3u8"])
    }

    @Test func listsTheRenditionsAndVariantsAMasterNames() {
        let master = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="in the variant"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="one",URI="a.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO="a"

            v.m3u8
            stray.m3u8
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI="i.m3u8"
            """
        let named = PlaylistCheck.Outline(master).named
        #expect(named.map(\.uri) == ["a.m3u8", "v.m3u8"] && named.map(\.isRendition) == [true, false])
        #expect(PlaylistCheck.Outline("#EXTM3U\n#EXTINF:2,\na.ts\n").named.isEmpty)
    }

    /// A directory of playlists; `problem()` checks its master.m3u8.
    final class Playlists {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playlists-\(UUID())").path
        init() throws {
            try FileManager.default.createDirectory(atPath: directory + "/sub", withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: directory) }
        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        func problem() -> String? { PlaylistCheck.problem(inMasterAt: directory + "/master.m3u8") }
    }

    static let media = "#EXTM3U\n#EXTINF:2,\na.ts\n#EXT-X-ENDLIST\n"

    @Test func findsTheEmptyRenditionAndOnlyIt() throws {
        let playlists = try Playlists()
        try playlists.write("full.m3u8", Self.media)
        try playlists.write("sub/empty.m3u8", "#EXTM3U\n#EXT-X-ENDLIST\n")
        try playlists.write("garbage.m3u8", "not a playlist")
        try playlists.write(
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
        #expect(playlists.problem() == "its rendition playlist 'sub/empty.m3u8?token=1' lists no segments")
        try playlists.write("sub/empty.m3u8", Self.media)
        #expect(playlists.problem() == nil)
        // A media playlist (it names none) and a URL are not looked at.
        #expect(PlaylistCheck.problem(inMasterAt: playlists.directory + "/full.m3u8") == nil)
        #expect(PlaylistCheck.problem(inMasterAt: "http://127.0.0.1:1/master.m3u8") == nil)
    }

    @Test(arguments: ["master.m3u8", "other.m3u8"])
    func refusesAMasterThatNamesAMaster(variant: String) throws {
        let playlists = try Playlists()
        // The master names itself, or a playlist that names the master back.
        try playlists.write("master.m3u8", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\(variant)\n")
        try playlists.write("other.m3u8", "#EXTM3U\n#EXTINF:2,\na.ts\n#EXT-X-STREAM-INF:BANDWIDTH=1\nmaster.m3u8\n")
        #expect(playlists.problem() == "the playlist '\(variant)' it names is itself a master playlist")
        try playlists.write("other.m3u8", Self.media)
        #expect(
            playlists.problem()
                == (variant == "other.m3u8" ? nil : "the playlist 'master.m3u8' it names is itself a master playlist"))
    }
}
