/// The OpenAPI 3.1 document, `docs/openapi.yaml`, embedded at build time and served as JSON at
/// `/v1/openapi.json`.
public enum OpenAPIDocument {
    /// The document as JSON, converted from the YAML once, on first use.
    public static let document: JSON = {
        do { return try YAMLSubset.parse(yaml) } catch {
            return .object([("error", .string("docs/openapi.yaml does not parse: \(error)"))])
        }
    }()

    /// The document's JSON text.
    static let json: [UInt8] = document.serialized
}
