import Foundation
import HTTPTestSupport
import Testing

/// Acceptance 6: schemathesis (from PyPI, installed into .build/venv by `make test`) fuzzes the live
/// gateway from its own /v1/openapi.json, with a bounded number of examples per operation. It must find
/// no 5xx, no undocumented status or content type, no missing documented header and no response that
/// breaks its schema.
@Suite(.serialized, .timeLimit(.minutes(30))) struct SchemathesisTests {
    static let schemathesis = repositoryRoot.appendingPathComponent(".build/venv/bin/schemathesis").path

    @Test func findsNoServerErrorsAndNoSchemaViolations() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.schemathesis),
            "schemathesis is missing: `make test` installs it into .build/venv")
        let server = try GatewayServer()
        let admin = try server.token("admin")
        let clip = try makeAESHLS(in: server.importRoot, name: "clip")
        try server.importAsset(clip, id: "clip", token: admin)
        let (session, token) = try server.session("clip", token: admin)
        try Data("x".utf8).write(to: URL(fileURLWithPath: server.inputRoot + "/clip.mp4"))

        // Real identifiers, so generated requests reach past the 404s into the handlers. One worker:
        // hypothesis on Debian's Python 3.11 can trip over its own AST parsing from two threads.
        let config = server.directory.path("schemathesis.toml")
        try """
        [parameters]
        asset = "clip"
        kid = "\(clip.kid)"
        token = "\(token)"

        [[operations]]
        include-path-regex = "^/v1/sessions/"
        parameters = { id = "\(session)" }

        [[operations]]
        include-path-regex = "^/v1/assets/"
        parameters = { id = "clip" }

        # An event stream stays open: read its first event, then move on.
        [[operations]]
        include-path-regex = "/events$"
        max-stream-events = 1

        """.write(toFile: config, atomically: true, encoding: .utf8)
        // Run inside the test's directory: schemathesis keeps a cache in its working directory.
        let result = try run(
            "/usr/bin/env",
            [
                "-C", server.directory.url.path, Self.schemathesis, "--config-file", config, "run",
                "http://127.0.0.1:\(server.port)/v1/openapi.json", "--header",
                "Authorization: Bearer \(admin)", "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance",
                "--phases", "examples,coverage,fuzzing", "--max-examples", "25", "--seed", "20261129", "--workers", "1",
                "--request-timeout", "10", "--no-color", "--warnings", "off",
            ], timeout: 600)
        #expect(result.status == 0, "\(result.stdout.suffix(6000))\n\(result.stderr.suffix(2000))")
        #expect(result.stdout.contains("Tested: 25"), "\(result.stdout.suffix(3000))")
        #expect(server.isUp)
        #expect(!server.log.contains("internal error"), "\(server.log)")
    }
}
