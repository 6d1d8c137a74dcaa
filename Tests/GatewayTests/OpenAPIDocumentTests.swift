import ControlAPI
import Foundation
import Gateway
import HTTPServer
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
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let yamlPath = root.appendingPathComponent("docs/openapi.yaml").path
    static let playerYAMLPath = root.appendingPathComponent("docs/openapi-player.yaml").path
    /// Python with PyYAML: the venv `make test` makes for schemathesis, which depends on PyYAML.
    static let python = root.appendingPathComponent(".build/venv/bin/python").path

    /// Loads the YAML file in argv[1] with PyYAML (its safe loader) and the JSON file in argv[2], and
    /// prints the first place where they differ, or nothing. Object member order does not matter;
    /// numbers compare by value (`1` and `1.0` are the same JSON number), but a boolean is not a number.
    static let compareScript = """
        import json, sys, yaml
        def normal(value):
            if value is None or isinstance(value, (bool, str)):
                return value
            if isinstance(value, (int, float)):
                return float(value)
            if isinstance(value, list):
                return [normal(item) for item in value]
            if isinstance(value, dict):
                return {str(key): normal(item) for key, item in value.items()}
            raise TypeError("a YAML value JSON cannot hold: %r" % (value,))
        def difference(yaml_value, json_value, path):
            if type(yaml_value) is not type(json_value):
                return "%s: %r in the YAML, %r served" % (path, yaml_value, json_value)
            if isinstance(yaml_value, dict):
                for key in sorted(set(yaml_value) | set(json_value)):
                    if key not in json_value:
                        return "%s/%s: in the YAML, not served" % (path, key)
                    if key not in yaml_value:
                        return "%s/%s: served, not in the YAML" % (path, key)
                    found = difference(yaml_value[key], json_value[key], path + "/" + key)
                    if found:
                        return found
                return None
            if isinstance(yaml_value, list):
                if len(yaml_value) != len(json_value):
                    return "%s: %d items in the YAML, %d served" % (path, len(yaml_value), len(json_value))
                for index, (a, b) in enumerate(zip(yaml_value, json_value)):
                    found = difference(a, b, "%s/%d" % (path, index))
                    if found:
                        return found
                return None
            return None if yaml_value == json_value else "%s: %r in the YAML, %r served" % (path, yaml_value, json_value)
        with open(sys.argv[1]) as source:
            expected = normal(yaml.safe_load(source))
        with open(sys.argv[2]) as served:
            actual = normal(json.load(served))
        print((difference(expected, actual, "") or "")[:2000], end="")
        """

    @Test func theEmbeddedDocumentIsDocsOpenAPIYAML() throws {
        let file = try String(contentsOfFile: Self.yamlPath, encoding: .utf8)
        // A multi-line literal has no final newline; the file has one.
        #expect(OpenAPIDocument.yaml + "\n" == file, "run `make openapi` after editing docs/openapi.yaml")
        let player = try String(contentsOfFile: Self.playerYAMLPath, encoding: .utf8)
        #expect(
            OpenAPIDocument.playerYAML + "\n" == player, "run `make openapi` after editing docs/openapi-player.yaml")
    }

    /// `/v1/openapi.json` is the YAML converted by GuardPlay's own YAML subset reader; PyYAML, an
    /// independent reader, must get the same document from docs/openapi.yaml, and the player's control
    /// server's from docs/openapi-player.yaml.
    @Test func theServedJSONIsWhatPyYAMLReadsInTheYAML() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.python),
            "\(Self.python) is missing: `make test` makes the venv (schemathesis brings PyYAML)")
        let fixture = try GatewayFixture()
        let gateway = GatewayAPI.router(
            gateway: fixture.gateway, state: ServiceState(), publicURL: nil, corsOrigins: [], log: { _ in })
        let player = PlayerAPI.router(
            player: IdlePlayer(), state: ServiceState(), metrics: Metrics(),
            authenticate: { _ in .success([.control]) }, log: { _ in })
        for (router, yaml) in [(gateway, Self.yamlPath), (player, Self.playerYAMLPath)] {
            let served = router.respond(
                to: HTTPRequest(
                    method: "GET", target: "/v1/openapi.json",
                    headers: HTTPHeaders([("Host", "gw.test"), ("Authorization", "Bearer gp_x")])))
            #expect(served.status == 200 && served.headers["Content-Type"] == "application/json")
            guard case .bytes(let json) = served.body else {
                Issue.record("/v1/openapi.json is not a byte body")
                return
            }
            let servedPath = fixture.scratch.path + "/openapi.json"
            try Data(json).write(to: URL(fileURLWithPath: servedPath))
            try Self.expectPyYAMLReads(yaml, as: servedPath)
        }
    }

    /// Runs the compare script on `yaml` and the JSON in `servedPath`, and records any difference.
    static func expectPyYAMLReads(_ yaml: String, as servedPath: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = ["-c", Self.compareScript, yaml, servedPath]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            process.terminate()
            Issue.record("python did not finish within 60 s")
            return
        }
        let difference = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let failure = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(failure)")
        #expect(difference.isEmpty, "the served \(yaml) differs from PyYAML's reading: \(difference)")
    }

    @Test(arguments: [OpenAPIDocument.document, OpenAPIDocument.playerDocument])
    func itIsAnOpenAPI31DocumentWhoseReferencesResolve(_ document: JSON) throws {
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
        #expect(references.count > 20)
        for reference in Set(references) {
            var node: JSON? = document
            for part in reference.dropFirst(2).split(separator: "/") { node = node?[String(part)] }
            #expect(node != nil, "\(reference) does not resolve")
        }
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsARoute() throws {
        let fixture = try GatewayFixture()
        let servers: [(name: String, routes: [Route], document: JSON)] = [
            (
                "gateway", GatewayAPI.routes(gateway: fixture.gateway, state: ServiceState(), publicURL: nil),
                OpenAPIDocument.document
            ),
            (
                "player",
                PlayerAPI.router(
                    player: IdlePlayer(), state: ServiceState(), metrics: Metrics(),
                    authenticate: { _ in .failure(.missing) },
                    log: { _ in }
                ).routes, OpenAPIDocument.playerDocument
            ),
        ]
        for server in servers {
            let served = SchemaAgreementTests.operations(of: server.routes)
            let documented = SchemaAgreementTests.operations(server.document)
            #expect(
                served.subtracting(documented).isEmpty,
                "\(server.name) undocumented: \(served.subtracting(documented).sorted())")
            #expect(
                documented.subtracting(served).isEmpty,
                "\(server.name) not served: \(documented.subtracting(served).sorted())")
        }
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
