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
    }
}
