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

    /// A recorded graph: GNOME Network Displays' way of taking the screencast (a `pipewiresrc` with the
    /// node's path, in a process whose binary is `gnome-network-displays`) linked to a mutter-named
    /// screencast node. Both the node and the consumer name the casting sender and its PID.
    @Test func castingToANetworkDisplayIsNamed() throws {
        let found = try detections(in: "gnome-network-displays-cast.json")
        #expect(found.count == 2 && found.allSatisfy { $0.kind == .screen }, "\(found)")
        let producer = try #require(found.first { $0.reason.contains("meta-screen-cast-src") })
        #expect(producer.app == "gnome-network-displays" && producer.pid == 4997, "\(producer)")
        #expect(
            producer.reason
                == "screencast node 'meta-screen-cast-src' is cast to a network display by GNOME Network Displays "
                + "(Miracast/Chromecast)")
        let consumer = try #require(found.first { $0.nodeID == 39 })
        #expect(consumer.app == "gnome-network-displays" && consumer.pid == 4997)
        #expect(consumer.reason.contains("casts to a network display: GNOME Network Displays"), "\(consumer.reason)")
        // Another consumer of the same graph is not called a cast.
        var rules = PipeWireCaptureRules(playbackSink: "guardplay-sink")
        rules.castingSenders = [:]
        var graph = PipeWireGraph()
        try graph.apply(json: try pipeWireFixture("gnome-network-displays-cast.json"))
        #expect(rules.detections(in: graph).allSatisfy { !$0.reason.contains("network display") })
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

    @Test func ourSinkIsTheOneOurStreamPlaysTo() throws {
        var graph = PipeWireGraph()
        try graph.apply(json: try pipeWireFixture("audio-monitor-record.json"))
        // pw-play (PID 13865) stands for GuardPlay's own stream here.
        let ours = PipeWireCaptureRules(ignoredPIDs: [13865])
        #expect(ours.playbackSinks(in: graph) == ["guardplay-sink"])
        #expect(ours.detections(in: graph).map(\.kind) == [.audio])
        // With no stream of ours and no default sink known, any sink's monitor counts.
        #expect(PipeWireCaptureRules(ignoredPIDs: [1]).playbackSinks(in: graph) == nil)
    }

    /// Two sinks; GuardPlay plays to `speakers`; `pw-record` records the monitor of `hdmi`, then of
    /// `speakers`; the session's default sink is `hdmi`.
    @Test func recordingAnotherSinkThanOursIsNotCapture() throws {
        func graph(recording sink: Int, ourStream: Bool) throws -> PipeWireGraph {
            var graph = PipeWireGraph()
            try graph.apply(json: Array(twoSinks(recording: sink, ourStream: ourStream).utf8))
            return graph
        }
        let rules = PipeWireCaptureRules(ignoredPIDs: [500])
        #expect(rules.playbackSinks(in: try graph(recording: 11, ourStream: true)) == ["speakers"])
        #expect(rules.detections(in: try graph(recording: 11, ourStream: true)).isEmpty)
        let found = rules.detections(in: try graph(recording: 10, ourStream: true))
        #expect(found.count == 1 && found[0].kind == .audio && found[0].pid == 600)
        #expect(found[0].reason.contains("'speakers'"))
        // Our stream not in the graph (say, played through ALSA directly): the default sink is assumed.
        #expect(rules.playbackSinks(in: try graph(recording: 11, ourStream: false)) == ["hdmi"])
        #expect(rules.detections(in: try graph(recording: 11, ourStream: false)).count == 1)
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

/// A hand-made dump: sinks `speakers` (node 10, monitor port 102) and `hdmi` (node 11, monitor port 112),
/// GuardPlay's stream (client PID 500) linked to `speakers`, a `pw-record` (client PID 600) linked to the
/// monitor of node `recording`, and the default sink `hdmi`.
func twoSinks(recording sink: Int, ourStream: Bool) -> String {
    func node(_ id: Int, _ name: String, _ mediaClass: String, client: Int? = nil) -> String {
        let owner = client.map { ", \"client.id\": \($0)" } ?? ""
        return """
            {"id": \(id), "type": "PipeWire:Interface:Node", "info": {"state": "running",
             "props": {"node.name": "\(name)", "media.class": "\(mediaClass)"\(owner)}}}
            """
    }
    func port(_ id: Int, node: Int, output: Bool, monitor: Bool = false) -> String {
        """
        {"id": \(id), "type": "PipeWire:Interface:Port", "info": {"direction": "\(output ? "output" : "input")",
         "props": {"node.id": \(node), "port.monitor": \(monitor)}}}
        """
    }
    func link(_ id: Int, from: (Int, Int), to: (Int, Int)) -> String {
        """
        {"id": \(id), "type": "PipeWire:Interface:Link", "info": {"output-node-id": \(from.0),
         "output-port-id": \(from.1), "input-node-id": \(to.0), "input-port-id": \(to.1)}}
        """
    }
    func client(_ id: Int, pid: Int, binary: String) -> String {
        """
        {"id": \(id), "type": "PipeWire:Interface:Client", "info": {"props": {"application.process.id": \(pid),
         "application.process.binary": "\(binary)"}}}
        """
    }
    var objects = [
        node(10, "speakers", "Audio/Sink"), port(101, node: 10, output: false),
        port(102, node: 10, output: true, monitor: true),
        node(11, "hdmi", "Audio/Sink"), port(111, node: 11, output: false),
        port(112, node: 11, output: true, monitor: true),
        client(60, pid: 600, binary: "pw-record"), node(61, "pw-record", "Stream/Input/Audio", client: 60),
        port(611, node: 61, output: false), link(62, from: (sink, sink == 10 ? 102 : 112), to: (61, 611)),
        """
        {"id": 70, "type": "PipeWire:Interface:Metadata", "props": {"metadata.name": "default"},
         "metadata": [{"subject": 0, "key": "default.audio.sink", "type": "Spa:String:JSON",
                       "value": {"name": "hdmi"}}]}
        """,
    ]
    if ourStream {
        objects += [
            client(50, pid: 500, binary: "guard-play"), node(51, "guard-play", "Stream/Output/Audio", client: 50),
            port(511, node: 51, output: true), link(52, from: (51, 511), to: (10, 101)),
        ]
    }
    return "[" + objects.joined(separator: ",\n") + "]"
}
