import Foundation
import ProcessTestSupport
import Testing

/// The screen-recording harness: the stream a gateway serves session S, played in a player window under
/// Xvfb and recorded with a real `ffmpeg -f x11grab`, is ten seconds of the clip's own pictures in order
/// (not a mask, not the black screen).
@Suite(.serialized, .timeLimit(.minutes(30))) struct PlayerWindowRecordingTests {
    @Test func aRecordingOfTheSessionsStreamInAPlayerWindowIsTheVideoInOrder() throws {
        let server = try GatewayServer()
        let admin = try server.token("admin")
        _ = try server.packageWatermarkedClip(token: admin)
        let (_, token) = try server.session("marked", token: admin)

        // Playing in real time is what a recording of a window needs, and the suites running beside this one
        // can starve ffplay, the gateway or the grab for many seconds (one CI run recorded a picture frozen
        // for 30 s of a 10 s clip). A recording that is not the clip in real time is made once more, and the
        // second is judged; a player that does not play the stream fails both.
        func record() throws -> (PlayerWindowRecording, [(frame: Int, correlation: Double)]) {
            let directory = try TemporaryDirectory()
            let recording = try PlayerWindowRecording.record(
                "http://127.0.0.1:\(server.port)/v1/hls/marked/master.m3u8?token=\(token)", width: 640, height: 360,
                to: directory.path("recording.mp4"), directory: directory.url.path)
            return (recording, try PlayerWindowRecording.bestMatches(recording.path, source: fixture("clip.mp4")))
        }
        var (recording, matches) = try record()
        if abs(recording.duration - 10) > 1.5 || matches.count != recording.frames {
            print("PlayerWindowRecordingTests: the first recording lasted \(recording.duration) s; recording again")
            (recording, matches) = try record()
        }
        // The clip is ten seconds; a loaded machine may stall the player or the grab a little.
        #expect(abs(recording.duration - 10) <= 1.5, "\(recording.duration) s")
        #expect(matches.count == recording.frames)
        // Each recorded frame looks like a frame of the clip (a mask or the black screen correlates 0)...
        let alike = matches.filter { $0.correlation > 0.9 }.count
        #expect(alike >= matches.count * 9 / 10, "\(alike) of \(matches.count) frames look like the clip")
        // ...and like the one the window showed at that moment: the matched frame advances with the
        // recording, at one constant offset give or take half a second.
        let offsets = matches.enumerated().map { $0.element.frame - $0.offset }.sorted()
        let offset = offsets[offsets.count / 2]
        let inStep = matches.enumerated().filter { abs($0.element.frame - $0.offset - offset) <= 15 }.count
        #expect(inStep >= matches.count * 8 / 10, "\(inStep) of \(matches.count) frames in step, offset \(offset)")
        // The matches run forward over much of the clip. ffplay may drop its first seconds to catch up with
        // the audio clock on a loaded machine (one CI run started at frame 45 or later, a quiet one at 90 or
        // later), so neither end is pinned to the clip's first or last frame.
        let (first, last) = (matches.first?.frame ?? 0, matches.last?.frame ?? 0)
        #expect(first < 150 && last - first >= 120, "the recording shows frames \(first)...\(last) of the clip")
    }
}
