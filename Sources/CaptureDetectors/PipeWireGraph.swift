import Foundation

/// The PipeWire object graph as `pw-dump` prints it, kept up to date from `pw-dump --monitor`, and the
/// rules that read capture out of it.
///
/// `pw-dump` prints a JSON array of objects; with `--monitor` it goes on printing arrays of changed
/// objects (whole objects, replacing the old ones) and `{"id": N, "info": null}` for removed ones.
public struct PipeWireGraph: Sendable {
    /// A node: a stream, a device or a filter.
    public struct Node: Sendable, Hashable {
        public var id: Int
        public var mediaClass: String
        public var name: String
        public var mediaRole: String?
        public var deviceAPI: String?
        public var clientID: Int?
        public var captureSink: Bool
        public var target: String?
        public var state: String?
    }

    /// A port of a node; monitor ports carry what a sink plays.
    public struct Port: Sendable, Hashable {
        public var id: Int
        public var nodeID: Int
        public var isOutput: Bool
        public var isMonitor: Bool
    }

    /// A connection from an output port to an input port.
    public struct Link: Sendable, Hashable {
        public var id: Int
        public var outputNode: Int
        public var outputPort: Int
        public var inputNode: Int
        public var inputPort: Int
    }

    /// A connected program.
    public struct Client: Sendable, Hashable {
        public var id: Int
        public var pid: Int32?
        public var binary: String?
        public var applicationName: String?
    }

    public private(set) var nodes: [Int: Node] = [:]
    public private(set) var ports: [Int: Port] = [:]
    public private(set) var links: [Int: Link] = [:]
    public private(set) var clients: [Int: Client] = [:]

    /// Creates an empty graph.
    public init() {}

    /// Applies one JSON array from `pw-dump` (the first full dump or a monitor update).
    public mutating func apply(json bytes: [UInt8]) throws(PipeWireParseError) {
        let data = Data(bytes)
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw PipeWireParseError(message: "not JSON: \(error.localizedDescription)")
        }
        guard let objects = parsed as? [Any] else {
            throw PipeWireParseError(message: "expected a JSON array of objects")
        }
        for case let object as [String: Any] in objects {
            apply(object: object)
        }
    }

    private mutating func apply(object: [String: Any]) {
        guard let id = object["id"] as? Int else { return }
        guard let info = object["info"] as? [String: Any] else {
            // `"info": null` removes the object, whatever it was.
            nodes[id] = nil
            ports[id] = nil
            links[id] = nil
            clients[id] = nil
            return
        }
        let props = info["props"] as? [String: Any] ?? [:]
        switch object["type"] as? String {
        case "PipeWire:Interface:Node":
            nodes[id] = Node(
                id: id, mediaClass: props["media.class"] as? String ?? "", name: props["node.name"] as? String ?? "",
                mediaRole: props["media.role"] as? String, deviceAPI: props["device.api"] as? String,
                clientID: props["client.id"] as? Int, captureSink: props["stream.capture.sink"] as? Bool ?? false,
                target: props["target.object"] as? String ?? props["node.target"] as? String,
                state: info["state"] as? String)
        case "PipeWire:Interface:Port":
            guard let node = props["node.id"] as? Int else { return }
            ports[id] = Port(
                id: id, nodeID: node, isOutput: info["direction"] as? String == "output",
                isMonitor: props["port.monitor"] as? Bool ?? false)
        case "PipeWire:Interface:Link":
            guard let outputNode = info["output-node-id"] as? Int, let outputPort = info["output-port-id"] as? Int,
                let inputNode = info["input-node-id"] as? Int, let inputPort = info["input-port-id"] as? Int
            else { return }
            links[id] = Link(
                id: id, outputNode: outputNode, outputPort: outputPort, inputNode: inputNode, inputPort: inputPort)
        case "PipeWire:Interface:Client":
            clients[id] = Client(
                id: id, pid: (props["application.process.id"] as? Int).map { Int32(truncatingIfNeeded: $0) },
                binary: props["application.process.binary"] as? String,
                applicationName: props["application.name"] as? String)
        default:
            break
        }
    }
}

/// A `pw-dump` text that does not parse.
public struct PipeWireParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    public var description: String { "pw-dump output: \(message)" }
}

/// One capture read from the PipeWire graph.
public struct PipeWireDetection: Sendable, Hashable {
    /// What is captured.
    public var kind: CaptureKind
    /// The node that shows it.
    public var nodeID: Int
    /// The capturing program's PID, when PipeWire knows it.
    public var pid: Int32?
    /// The capturing program's name, when known.
    public var app: String?
    /// How sure the rule is.
    public var confidence: Double
    /// Why, in a few words.
    public var reason: String
}

/// The rules that read screen and audio capture out of a `PipeWireGraph`.
public struct PipeWireCaptureRules: Sendable {
    /// Node names of compositor screencast producers: GNOME (mutter), wlroots (xdg-desktop-portal-wlr),
    /// Hyprland (xdg-desktop-portal-hyprland) and niri; a trailing `*` matches any suffix.
    public var screencastProducers = [
        "meta-screen-cast-src", "xdpw-stream-*", "xdph-streaming-*", "niri-screen-cast-src",
    ]
    /// The node name of the sink GuardPlay plays to; recording its monitor ports is audio capture. When
    /// nil, recording the monitor of any sink counts.
    public var playbackSink: String?
    /// PIDs to ignore (GuardPlay's own).
    public var ignoredPIDs: Set<Int32> = []

    /// Creates the rules.
    public init(playbackSink: String? = nil, ignoredPIDs: Set<Int32> = []) {
        self.playbackSink = playbackSink
        self.ignoredPIDs = ignoredPIDs
    }

    /// Every capture the graph shows, screen first.
    public func detections(in graph: PipeWireGraph) -> [PipeWireDetection] {
        var found: [PipeWireDetection] = []
        for node in graph.nodes.values.sorted(by: { $0.id < $1.id }) {
            let client = node.clientID.flatMap { graph.clients[$0] }
            if let pid = client?.pid, ignoredPIDs.contains(pid) { continue }
            let app = client?.binary ?? client?.applicationName
            if isScreencastProducer(node) {
                let consumer = consumers(of: node.id, in: graph).first
                let consumerClient = consumer?.clientID.flatMap { graph.clients[$0] }
                found.append(
                    PipeWireDetection(
                        kind: .screen, nodeID: node.id, pid: consumerClient?.pid ?? client?.pid,
                        app: consumerClient?.binary ?? app, confidence: 0.95,
                        reason: "screencast node '\(node.name)' is live"))
            } else if node.mediaClass == "Stream/Input/Video", !isCamera(node, in: graph) {
                found.append(
                    PipeWireDetection(
                        kind: .screen, nodeID: node.id, pid: client?.pid, app: app, confidence: 0.7,
                        reason: "video capture stream '\(node.name)' that is not a camera"))
            } else if node.mediaClass == "Stream/Input/Audio", recordsPlaybackMonitor(node, in: graph) {
                found.append(
                    PipeWireDetection(
                        kind: .audio, nodeID: node.id, pid: client?.pid, app: app, confidence: 0.9,
                        reason: "audio stream '\(node.name)' records the monitor of \(playbackSink ?? "a sink")"))
            }
        }
        return found.sorted { ($0.kind == .screen ? 0 : 1, $0.nodeID) < ($1.kind == .screen ? 0 : 1, $1.nodeID) }
    }

    func isScreencastProducer(_ node: PipeWireGraph.Node) -> Bool {
        guard node.mediaClass.hasSuffix("Video") || node.mediaClass == "Video/Source" else { return false }
        return screencastProducers.contains { pattern in
            pattern.hasSuffix("*") ? node.name.hasPrefix(pattern.dropLast()) : node.name == pattern
        }
    }

    func consumers(of nodeID: Int, in graph: PipeWireGraph) -> [PipeWireGraph.Node] {
        graph.links.values.filter { $0.outputNode == nodeID }.compactMap { graph.nodes[$0.inputNode] }
    }

    /// A video consumer is a camera viewer when it says so or when what feeds it is a camera device.
    func isCamera(_ node: PipeWireGraph.Node, in graph: PipeWireGraph) -> Bool {
        if node.mediaRole == "Camera" { return true }
        let sources = graph.links.values.filter { $0.inputNode == node.id }.compactMap { graph.nodes[$0.outputNode] }
        return !sources.isEmpty
            && sources.allSatisfy { source in
                source.mediaClass == "Video/Source" && ["v4l2", "libcamera"].contains(source.deviceAPI ?? "")
                    && !isScreencastProducer(source)
            }
    }

    /// True when `node` takes input from the monitor ports of the playback sink.
    func recordsPlaybackMonitor(_ node: PipeWireGraph.Node, in graph: PipeWireGraph) -> Bool {
        for link in graph.links.values where link.inputNode == node.id {
            guard let port = graph.ports[link.outputPort], port.isMonitor, let source = graph.nodes[link.outputNode]
            else { continue }
            if playbackSink == nil || source.name == playbackSink { return true }
        }
        // Not linked yet, but asking for the sink's monitor: count it already.
        if node.captureSink, let target = node.target, playbackSink == nil || target == playbackSink { return true }
        return false
    }
}

extension PipeWireCaptureRules {
    /// The default rules, ignoring GuardPlay's own process.
    public static var ignoringThisProcess: PipeWireCaptureRules {
        PipeWireCaptureRules(ignoredPIDs: [getpid()])
    }
}
