import CaptureDetectors
import Foundation
import Testing

/// Fixture dumps: recorded from a real PipeWire 0.3.65 with WirePlumber (Debian 12) unless their name
/// starts with `edited-`; those add hand-made nodes to a recorded dump (see Fixtures/README.md).
func pipeWireFixture(_ name: String) throws -> [UInt8] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    return Array(try Data(contentsOf: url))
}

func detections(in fixture: String, sink: String? = "guardplay-sink") throws -> [PipeWireDetection] {
    var graph = PipeWireGraph()
    try graph.apply(json: try pipeWireFixture(fixture))
    return PipeWireCaptureRules(playbackSink: sink).detections(in: graph)
}

@Suite struct PipeWireClassificationTests {
    @Test func idlePlaybackIsClear() throws {
        #expect(try detections(in: "idle-playback.json").isEmpty)
    }

    @Test func recordingTheSinkMonitorIsAudioCapture() throws {
        let found = try detections(in: "audio-monitor-record.json")
        #expect(found.count == 1)
        #expect(found.first?.kind == .audio)
        #expect(found.first?.app == "pw-cat")
        #expect(found.first?.pid != nil)
    }

    @Test func recordingAnotherSinkIsNotOurs() throws {
        #expect(try detections(in: "audio-monitor-record.json", sink: "some-other-sink").isEmpty)
        #expect(try detections(in: "audio-monitor-record.json", sink: nil).count == 1)
    }

    @Test func recordingAMicrophoneIsNotCapture() throws {
        #expect(try detections(in: "microphone-record.json").isEmpty)
    }

    @Test func gnomeScreencastProducerIsScreenCapture() throws {
        let found = try detections(in: "gnome-screencast.json")
        #expect(found.map(\.kind) == [.screen])
        #expect(found.first?.reason.contains("meta-screen-cast-src") == true)
    }

    @Test func consumerOfTheScreencastIsNamed() throws {
        let found = try detections(in: "edited-obs-consumes-screencast.json")
        let producer = try #require(found.first)
        #expect(producer.kind == .screen && producer.app == "obs" && producer.pid == 4242)
        // The consumer is itself a non-camera video input.
        #expect(found.contains { $0.reason.contains("not a camera") })
    }

    @Test func wlrootsPortalStream() throws {
        let found = try detections(in: "edited-wlroots-screencast.json")
        #expect(found.count == 1 && found[0].kind == .screen && found[0].reason.contains("xdpw-stream-3"))
    }

    @Test func cameraViewerIsNotCapture() throws {
        #expect(try detections(in: "edited-camera-viewer.json").isEmpty)
    }

    @Test func ownProcessIsIgnored() throws {
        var graph = PipeWireGraph()
        try graph.apply(json: try pipeWireFixture("edited-wlroots-screencast.json"))
        #expect(PipeWireCaptureRules(ignoredPIDs: [777]).detections(in: graph).isEmpty)
    }

    @Test func malformedDumpsAreErrors() {
        var graph = PipeWireGraph()
        #expect(throws: PipeWireParseError.self) { try graph.apply(json: Array("not json".utf8)) }
        #expect(throws: PipeWireParseError.self) { try graph.apply(json: Array("{\"id\": 1}".utf8)) }
    }
}

@Suite struct PipeWireMonitorStreamTests {
    /// A recorded `pw-dump --monitor` run: pw-record started on the sink's monitor, then stopped.
    @Test func followsARecordingStartingAndStopping() throws {
        let stream = try pipeWireFixture("monitor-stream.txt")
        var splitter = JSONArraySplitter()
        var graph = PipeWireGraph()
        let rules = PipeWireCaptureRules(playbackSink: "guardplay-sink")
        var states: [Bool] = []
        // Feed in awkward 700-byte reads, as a pipe might deliver them.
        for start in stride(from: 0, to: stream.count, by: 700) {
            for array in try splitter.feed(stream[start..<min(start + 700, stream.count)]) {
                try graph.apply(json: array)
                let capturing = !rules.detections(in: graph).isEmpty
                if states.last != capturing { states.append(capturing) }
            }
        }
        #expect(states == [false, true, false])
    }

    @Test func splitterRejectsGarbageAndOversizedUpdates() throws {
        var splitter = JSONArraySplitter()
        #expect(throws: PipeWireParseError.self) { try splitter.feed(Array("hello".utf8)) }
        var small = JSONArraySplitter(limit: 10)
        #expect(throws: PipeWireParseError.self) { try small.feed(Array("[\"aaaaaaaaaaaaaaaaaaaa".utf8)) }
        var strings = JSONArraySplitter()
        let arrays = try strings.feed(Array("[\"]\\\"[\"] [1,[2]]".utf8))
        #expect(arrays.map { String(decoding: $0, as: UTF8.self) } == ["[\"]\\\"[\"]", "[1,[2]]"])
    }
}
