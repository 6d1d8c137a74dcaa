import ControlAPI
import Foundation
import Gateway
import Testing

@testable import ControlAPI

/// A player that does nothing, for listing the player routes.
struct IdlePlayer: PlayerControlling {
    var status: PlayerStatusReport {
        PlayerStatusReport(
            state: "paused", position: 0, duration: 10, capture: "unknown", captureSource: "none",
            captureReason: "no source", protecting: true)
    }
    func pause() {}
    func resume() {}
    func seek(to seconds: Double) {}
    func reportCapture(capturing: Bool, seq: UInt64, lease: Double, observedAt: Date) -> PlayerReportOutcome {
        .accepted
    }
    func subscribe(_ subscriber: @escaping @Sendable (String, JSON) -> Bool) -> Int { 0 }
    func unsubscribe(_ id: Int) {}
}

@Suite struct OpenAPIDocumentTests {
    static let yamlPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml").path

    @Test func theEmbeddedDocumentIsDocsOpenAPIYAML() throws {
        let file = try String(contentsOfFile: Self.yamlPath, encoding: .utf8)
        // A multi-line literal has no final newline; the file has one.
        #expect(OpenAPIDocument.yaml + "\n" == file, "run `make openapi` after editing docs/openapi.yaml")
    }

    @Test func itIsAnOpenAPI31DocumentWhoseReferencesResolve() throws {
        let document = try YAMLSubset.parse(OpenAPIDocument.yaml)
        #expect(OpenAPIDocument.document == document)
        #expect(document["openapi"] == "3.1.0")
        var references: [String] = []
        func collect(_ value: JSON) {
            switch value {
            case .object(let members):
                for (key, member) in members {
                    if key == "$ref", let target = member.string { references.append(target) } else { collect(member) }
                }
            case .array(let items): items.forEach(collect)
            default: break
            }
        }
        collect(document)
        #expect(references.count > 50)
        for reference in Set(references) {
            var node: JSON? = document
            for part in reference.dropFirst(2).split(separator: "/") { node = node?[String(part)] }
            #expect(node != nil, "\(reference) does not resolve")
        }
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsARoute() throws {
        let fixture = try GatewayFixture()
        let routes =
            GatewayAPI.routes(gateway: fixture.gateway, state: ServiceState(), publicURL: nil)
            + PlayerRoutes.routes(player: IdlePlayer())
        let served = Set(
            routes.map { route in
                "\(route.method.lowercased()) \(route.pattern.replacingOccurrences(of: ":file}", with: "}"))"
            })
        let paths = try #require(OpenAPIDocument.document["paths"]?.members)
        var documented = Set<String>()
        for (path, item) in paths {
            for (method, _) in item.members ?? [] where ["get", "put", "post", "delete", "patch"].contains(method) {
                documented.insert("\(method) \(path)")
            }
        }
        #expect(served.subtracting(documented).isEmpty, "undocumented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "not served: \(documented.subtracting(served).sorted())")
    }
}

@Suite struct YAMLSubsetTests {
    @Test func readsMappingsSequencesAndScalars() throws {
        let text = """
            # comment
            name: GuardPlay  # trailing comment
            version: "1.0"
            count: 3
            ratio: -0.5
            on: true
            nothing: null
            tags: [a, "b c", 'd''e']
            empty: {}
            "200":
              description: 'It''s # not a comment'
            list:
              - plain
              - key: value
                other: 2
              -
                nested: [1]
            sameIndent:
            - x
            """
        let value = try YAMLSubset.parse(text)
        let expected: JSON = .object([
            ("name", "GuardPlay"), ("version", "1.0"), ("count", 3), ("ratio", .number(-0.5)), ("on", true),
            ("nothing", .null), ("tags", .array(["a", "b c", "d'e"])), ("empty", .object([])),
            ("200", .object([("description", "It's # not a comment")])),
            (
                "list",
                .array(["plain", .object([("key", "value"), ("other", 2)]), .object([("nested", .array([1]))])])
            ),
            ("sameIndent", .array(["x"])),
        ])
        #expect(value == expected)
    }

    @Test(arguments: [
        "a: 1\na: 2", "a:\n\t- x", "a: &anchor 1", "a: |\n  text", "a: {b: 1}", "a: [[1]]", "a: 'open", "- x\nb: 1",
        "a: 1\n   b: 2", "a: \"bad \\q escape\"",
    ])
    func refusesWhatItDoesNotSupport(_ text: String) {
        #expect(throws: YAMLError.self) { _ = try YAMLSubset.parse(text) }
    }
}
