import Foundation

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
        if object["type"] as? String == "PipeWire:Interface:Metadata" {
            applyMetadata(object, id: id)
            return
        }
        guard let info = object["info"] as? [String: Any] else {
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

    /// Follows `default.audio.sink` in the `default` metadata. Monitor updates may list only the
    /// changed entries, so entries are merged; a null value clears the key, and `"metadata": null`
    /// removes the object.
    private mutating func applyMetadata(_ object: [String: Any], id: Int) {
        let props = object["props"] as? [String: Any] ?? [:]
        if let name = props["metadata.name"] as? String {
            guard name == "default" else { return }
            defaultMetadataID = id
        } else if id != defaultMetadataID {
            return
        }
        guard let entries = object["metadata"] as? [Any] else {
            if object.keys.contains("metadata") || object.keys.contains("info") {
                defaultMetadataID = nil
                defaultAudioSink = nil
            }
            return
        }
        for case let entry as [String: Any] in entries {
            guard entry["subject"] as? Int == 0, entry["key"] as? String == "default.audio.sink" else { continue }
            defaultAudioSink = (entry["value"] as? [String: Any])?["name"] as? String
        }
    }
}

/// A `pw-dump` text that does not parse.
public struct PipeWireParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    public var description: String { "pw-dump output: \(message)" }
}
