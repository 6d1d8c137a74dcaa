import CaptureMonitor
import Foundation
import Player
import Testing

@Suite struct EventJSONTests {
    @Test func captureEventsBecomeParseableJSONLines() throws {
        let event = CaptureEvent(
            state: .capturing, source: "remote:a\"b", reason: "line\nbreak", pid: 42, app: nil, confidence: 0.75,
            since: CaptureTime(media: 2.5, wall: 100))
        let line = PlayerEvent.capture(event, protecting: true).jsonLine
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["event"] as? String == "state")
        #expect(object["state"] as? String == "capturing")
        #expect(object["source"] as? String == "remote:a\"b")
        #expect(object["reason"] as? String == "line\nbreak")
        #expect(object["pid"] as? Int == 42)
        #expect(object["app"] is NSNull)
        #expect(object["confidence"] as? Double == 0.75)
        #expect(object["time"] as? Double == 2.5)
        #expect(object["protecting"] as? Bool == true)
        // `since` is the change's own moment in Unix time (the monotonic 100 s mapped), not the print time.
        let since = try #require(object["since"] as? Double)
        let expected = Date().timeIntervalSince1970 - (MonotonicClock.seconds() - 100)
        #expect(abs(since - expected) < 5)
    }

    @Test func protectionScreenshotAndNoticeLines() throws {
        func object(_ event: PlayerEvent) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(event.jsonLine.utf8)) as? [String: Any])
        }
        let change = try object(
            .protection(OutputSwitch(output: .video, protecting: true, media: 1.5, wall: 1_700_000_000.1234)))
        #expect(change["event"] as? String == "protection" && change["output"] as? String == "video")
        #expect(change["protecting"] as? Bool == true && change["time"] as? Double == 1.5)
        #expect(change["at"] as? Double == 1_700_000_000.123)
        // Numbers are written to the microsecond, without float noise or a trailing ".0".
        let noisy = PlayerEvent.protection(OutputSwitch(output: .audio, protecting: false, media: 0.1 + 0.2, wall: 7))
            .jsonLine
        #expect(noisy.contains(#""time":0.3,"#) && noisy.contains(#""at":7,"#), "\(noisy)")
        let shot = try object(.screenshotSaved(path: "/home/a/Pictures/x.png", protecting: false))
        #expect(shot["event"] as? String == "screenshot" && shot["path"] as? String == "/home/a/Pictures/x.png")
        #expect(shot["protecting"] as? Bool == false)
        let notice = try object(.notice("no display"))
        #expect(notice["event"] as? String == "notice" && notice["message"] as? String == "no display")
    }
}
