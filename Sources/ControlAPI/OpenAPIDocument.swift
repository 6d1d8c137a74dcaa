import SystemSupport

/// The OpenAPI 3.1 documents, embedded at build time and served as JSON at `/v1/openapi.json`: the
/// gateway's (`docs/openapi.yaml`) by `guard-play serve`, and the player control server's
/// (`docs/openapi-player.yaml`) by `guard-play FILE --control`. Each lists only its own server's routes.
public enum OpenAPIDocument {
    /// The gateway's document as JSON, converted from the YAML once, on first use.
    public static let document: JSON = parse(yaml, name: "docs/openapi.yaml")

    /// The player control server's document as JSON.
    public static let playerDocument: JSON = parse(playerYAML, name: "docs/openapi-player.yaml")

    /// The gateway's document's JSON text.
    static let json: [UInt8] = document.serialized

    /// The player control server's document's JSON text.
    static let playerJSON: [UInt8] = playerDocument.serialized

    private static func parse(_ text: String, name: String) -> JSON {
        do { return try YAMLSubset.parse(text) } catch {
            return .object([("error", .string("\(name) does not parse: \(error)"))])
        }
    }
}
