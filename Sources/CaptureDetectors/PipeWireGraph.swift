import FoundationEssentials
import SystemSupport

/// The PipeWire object graph as `pw-dump` prints it, kept up to date from `pw-dump --monitor`, and the
/// rules that read capture out of it.
///
/// `pw-dump` prints a JSON array of objects; with `--monitor` it goes on printing arrays of changed
/// objects (whole objects, replacing the old ones) and `{"id": N, "info": null}` for removed ones.
public struct PipeWireGraph: Sendable {
    /// A node: a stream, a device or a filter.
    public struct Node: Sendable, Hashable {
        /// The object ID.
        public var id: Int
        /// `media.class`, such as `Audio/Sink` or `Stream/Input/Video`.
        public var mediaClass: String
        /// `node.name`.
        public var name: String
        /// `media.role`, such as `Camera`.
        public var mediaRole: String?
        /// `device.api` of a device node, such as `v4l2`.
        public var deviceAPI: String?
        /// The client that made the node.
        public var clientID: Int?
        /// `stream.capture.sink`: the stream asks for a sink's monitor.
        public var captureSink: Bool
        /// `target.object` (or the older `node.target`): the node the stream asks to be linked to.
        public var target: String?
        /// The node's state, such as `running` or `suspended`.
        public var state: String?
    }

    /// A port of a node; monitor ports carry what a sink plays.
    public struct Port: Sendable, Hashable {
        /// The object ID.
        public var id: Int
        /// The node it belongs to.
        public var nodeID: Int
        /// True for an output port.
        public var isOutput: Bool
        /// `port.monitor`: the port carries what a sink plays.
        public var isMonitor: Bool
    }

    /// A connection from an output port to an input port.
    public struct Link: Sendable, Hashable {
        /// The object ID.
        public var id: Int
        /// The node the data leaves.
        public var outputNode: Int
        /// The port the data leaves.
        public var outputPort: Int
        /// The node the data enters.
        public var inputNode: Int
        /// The port the data enters.
        public var inputPort: Int
    }

    /// A connected program.
    public struct Client: Sendable, Hashable {
        /// The object ID.
        public var id: Int
        /// `application.process.id`.
        public var pid: Int32?
        /// `application.process.binary`.
        public var binary: String?
        /// `application.name`.
        public var applicationName: String?
    }

    /// The nodes by ID.
    public private(set) var nodes: [Int: Node] = [:]
    /// The ports by ID.
    public private(set) var ports: [Int: Port] = [:]
    /// The links by ID.
    public private(set) var links: [Int: Link] = [:]
    /// The clients by ID.
    public private(set) var clients: [Int: Client] = [:]
    /// The session manager's default sink (`default.audio.sink` in the `default` metadata), when known.
    public private(set) var defaultAudioSink: String?
    private var defaultMetadataID: Int?

    /// Creates an empty graph.
    public init() {}

    /// Applies one JSON array from `pw-dump` (the first full dump or a monitor update).
    public mutating func apply(json bytes: [UInt8]) throws(PipeWireParseError) {
        let parsed: JSON
        do {
            parsed = try JSON.parse(bytes)
        } catch {
            throw PipeWireParseError(message: "not JSON: \(error)")
        }
        guard let objects = parsed.array else {
            throw PipeWireParseError(message: "expected a JSON array of objects")
        }
        for object in objects where object.members != nil {
            apply(object: object)
        }
    }

    private mutating func apply(object: JSON) {
        guard let id = object["id"]?.int else { return }
        if object["type"]?.string == "PipeWire:Interface:Metadata" {
            applyMetadata(object, id: id)
            return
        }
        guard let info = object["info"]?.object else {
            // `"info": null` removes the object, whatever it was.
            nodes[id] = nil
            ports[id] = nil
            links[id] = nil
            clients[id] = nil
            if id == defaultMetadataID {
                defaultMetadataID = nil
                defaultAudioSink = nil
            }
            return
        }
        let props = info["props"]?.object ?? .object([])
        switch object["type"]?.string {
        case "PipeWire:Interface:Node":
            nodes[id] = Node(
                id: id, mediaClass: props["media.class"]?.string ?? "", name: props["node.name"]?.string ?? "",
                mediaRole: props["media.role"]?.string, deviceAPI: props["device.api"]?.string,
                clientID: props["client.id"]?.int, captureSink: props["stream.capture.sink"]?.bool ?? false,
                target: props["target.object"]?.string ?? props["node.target"]?.string,
                state: info["state"]?.string)
        case "PipeWire:Interface:Port":
            guard let node = props["node.id"]?.int else { return }
            ports[id] = Port(
                id: id, nodeID: node, isOutput: info["direction"]?.string == "output",
                isMonitor: props["port.monitor"]?.bool ?? false)
        case "PipeWire:Interface:Link":
            guard let outputNode = info["output-node-id"]?.int, let outputPort = info["output-port-id"]?.int,
                let inputNode = info["input-node-id"]?.int, let inputPort = info["input-port-id"]?.int
            else { return }
            links[id] = Link(
                id: id, outputNode: outputNode, outputPort: outputPort, inputNode: inputNode, inputPort: inputPort)
        case "PipeWire:Interface:Client":
            clients[id] = Client(
                id: id, pid: (props["application.process.id"]?.int).map { Int32(truncatingIfNeeded: $0) },
                binary: props["application.process.binary"]?.string,
                applicationName: props["application.name"]?.string)
        default:
            break
        }
    }

    /// Follows `default.audio.sink` in the `default` metadata. Monitor updates may list only the
    /// changed entries, so entries are merged; a null value clears the key, and `"metadata": null`
    /// removes the object.
    private mutating func applyMetadata(_ object: JSON, id: Int) {
        let props = object["props"]?.object ?? .object([])
        if let name = props["metadata.name"]?.string {
            guard name == "default" else { return }
            defaultMetadataID = id
        } else if id != defaultMetadataID {
            return
        }
        guard let entries = object["metadata"]?.array else {
            if object["metadata"] != nil || object["info"] != nil {
                defaultMetadataID = nil
                defaultAudioSink = nil
            }
            return
        }
        for entry in entries where entry.members != nil {
            guard entry["subject"]?.int == 0, entry["key"]?.string == "default.audio.sink" else { continue }
            defaultAudioSink = entry["value"]?.object?["name"]?.string
        }
    }
}

/// A `pw-dump` text that does not parse.
public struct PipeWireParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    public var description: String { "pw-dump output: \(message)" }
}
