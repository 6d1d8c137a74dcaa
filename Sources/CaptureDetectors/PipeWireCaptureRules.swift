import FoundationEssentials
import Glibc

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
    /// Programs that cast a screencast to another display, by the binary of the client that consumes it,
    /// with the name a report gives them: GNOME Network Displays sends Miracast (Wi-Fi Display) and
    /// Chromecast streams from the screencast it gets through the portal (a `pipewiresrc` in its own
    /// process, so its client's `application.process.binary` is `gnome-network-displays`).
    public var castingSenders = ["gnome-network-displays": "GNOME Network Displays (Miracast/Chromecast)"]
    /// The node name of the sink GuardPlay plays to, when the user names it; recording its monitor ports
    /// is audio capture. When nil, the sink is read from the graph (see `playbackSinks(in:)`).
    public var playbackSink: String?
    /// GuardPlay's own PIDs: their nodes are never a capture, and their playback streams show which sink
    /// is ours.
    public var ignoredPIDs: Set<Int32> = []

    /// Creates the rules.
    public init(playbackSink: String? = nil, ignoredPIDs: Set<Int32> = []) {
        self.playbackSink = playbackSink
        self.ignoredPIDs = ignoredPIDs
    }

    /// The sinks whose monitor counts as our audio, or nil for any sink. In order: the sink named by the
    /// user; the sinks our own playback streams (`Stream/Output/Audio` nodes of a client with one of
    /// `ignoredPIDs`) are linked to, or ask for; the session's default sink; otherwise any sink, since
    /// not knowing must not mean not protecting.
    public func playbackSinks(in graph: PipeWireGraph) -> Set<String>? {
        if let playbackSink { return [playbackSink] }
        var sinks = Set<String>()
        for node in graph.nodes.values where node.mediaClass == "Stream/Output/Audio" {
            guard let pid = node.clientID.flatMap({ graph.clients[$0] })?.pid, ignoredPIDs.contains(pid) else {
                continue
            }
            let linked = graph.links.values.filter { $0.outputNode == node.id }.compactMap { graph.nodes[$0.inputNode] }
            sinks.formUnion(linked.filter { $0.mediaClass.hasPrefix("Audio/Sink") }.map(\.name))
            if linked.isEmpty, let target = node.target { sinks.insert(target) }
        }
        if !sinks.isEmpty { return sinks }
        if let sink = graph.defaultAudioSink { return [sink] }
        return nil
    }

    /// Every capture the graph shows, screen first.
    public func detections(in graph: PipeWireGraph) -> [PipeWireDetection] {
        var found: [PipeWireDetection] = []
        let sinks = playbackSinks(in: graph)
        for node in graph.nodes.values.sorted(by: { $0.id < $1.id }) {
            let client = node.clientID.flatMap { graph.clients[$0] }
            if let pid = client?.pid, ignoredPIDs.contains(pid) { continue }
            let app = client?.binary ?? client?.applicationName
            if isScreencastProducer(node) {
                let consumerClients = consumers(of: node.id, in: graph).compactMap { consumer in
                    consumer.clientID.flatMap { graph.clients[$0] }
                }
                // A casting sender is named before any other consumer: it shows the screen elsewhere.
                let caster = consumerClients.first { castingSender($0) != nil }
                let consumerClient = caster ?? consumerClients.first
                let reason =
                    caster.flatMap(castingSender).map {
                        "screencast node '\(node.name)' is cast to a network display by \($0)"
                    }
                    ?? "screencast node '\(node.name)' is live"
                found.append(
                    PipeWireDetection(
                        kind: .screen, nodeID: node.id, pid: consumerClient?.pid ?? client?.pid,
                        app: consumerClient?.binary ?? app, confidence: 0.95, reason: reason))
            } else if node.mediaClass == "Stream/Input/Video", !isCamera(node, in: graph) {
                let reason =
                    client.flatMap(castingSender).map {
                        "video stream '\(node.name)' casts to a network display: \($0)"
                    }
                    ?? "video capture stream '\(node.name)' that is not a camera"
                found.append(
                    PipeWireDetection(
                        kind: .screen, nodeID: node.id, pid: client?.pid, app: app, confidence: 0.7, reason: reason))
            } else if node.mediaClass == "Stream/Input/Audio", let sink = recordedMonitor(node, of: sinks, in: graph) {
                found.append(
                    PipeWireDetection(
                        kind: .audio, nodeID: node.id, pid: client?.pid, app: app, confidence: 0.9,
                        reason: "audio stream '\(node.name)' records the monitor of \(sink)"))
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

    /// The name of the casting sender `client` runs, or nil when it is none.
    func castingSender(_ client: PipeWireGraph.Client) -> String? {
        client.binary.flatMap { castingSenders[$0] }
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

    /// The name of the sink whose monitor ports `node` takes input from, when it is one of `sinks` (any
    /// sink when `sinks` is nil); a stream that asks for a sink's monitor but is not linked yet counts
    /// already.
    func recordedMonitor(_ node: PipeWireGraph.Node, of sinks: Set<String>?, in graph: PipeWireGraph) -> String? {
        for link in graph.links.values where link.inputNode == node.id {
            guard let port = graph.ports[link.outputPort], port.isMonitor, let source = graph.nodes[link.outputNode]
            else { continue }
            if sinks?.contains(source.name) ?? true { return "'\(source.name)'" }
        }
        if node.captureSink, let target = node.target, sinks?.contains(target) ?? true { return "'\(target)'" }
        if node.captureSink, node.target == nil { return "the default sink" }
        return nil
    }
}

extension PipeWireCaptureRules {
    /// The default rules, ignoring GuardPlay's own process.
    public static var ignoringThisProcess: PipeWireCaptureRules {
        PipeWireCaptureRules(ignoredPIDs: [getpid()])
    }
}
