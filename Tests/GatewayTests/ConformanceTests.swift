import ControlAPI
import Foundation
import Gateway
import HTTPServer
import Testing

/// The documents, schemas and validation agree, and what is on the wire is what the schema says.
@Suite struct SchemaAgreementTests {
    /// The `{path: [methods]}` operations of a served OpenAPI document.
    static func operations(_ document: JSON?) -> Set<String> {
        var operations = Set<String>()
        for (path, item) in document?["paths"]?.members ?? [] {
            for (method, _) in item.members ?? [] where ["get", "put", "post", "delete", "patch"].contains(method) {
                operations.insert("\(method) \(path)")
            }
        }
        return operations
    }

    static func operations(of routes: [Route]) -> Set<String> {
        Set(
            routes.map { route in
                "\(route.method.lowercased()) \(route.pattern.replacingOccurrences(of: ":file}", with: "}"))"
            })
    }

    @Test func theGatewayAndThePlayerEachServeADocumentOfTheirOwnRoutes() throws {
        let api = try APIFixture()
        let gatewayDocument = api.call("GET", "/v1/openapi.json").json
        let gatewayRoutes = GatewayAPI.routes(gateway: api.gateway, state: ServiceState(), publicURL: nil)
        #expect(Self.operations(gatewayDocument) == Self.operations(of: gatewayRoutes))
        #expect(!Self.operations(gatewayDocument).contains { $0.contains("/v1/player") })

        let player = PlayerAPI.router(
            player: IdlePlayer(), state: ServiceState(), metrics: Metrics(),
            authenticate: { $0 == "control" ? .success([.control]) : .failure(.invalid) }, log: { _ in })
        let served = player.respond(
            to: HTTPRequest(
                method: "GET", target: "/v1/openapi.json",
                headers: HTTPHeaders([("Host", "player.test"), ("Authorization", "Bearer control")])))
        #expect(served.status == 200)
        #expect(Self.operations(served.json) == Self.operations(of: player.routes))
        #expect(!Self.operations(served.json).contains { $0.contains("/v1/sessions") || $0.contains("/v1/keys") })
        #expect(served.json?["info"]?["title"]?.string?.contains("player") == true)
    }

    @Test(arguments: ["/v1/assets", "/v1/packaging-jobs"])
    func refusesAnEmptyOrMalformedCursorAndTheSchemaSaysWhatIsValid(_ path: String) throws {
        let api = try APIFixture()
        for cursor in ["", "zzz", "-1", "0", "%20"] {
            let response = api.call("GET", "\(path)?cursor=\(cursor)", token: api.adminToken)
            #expect(response.status == 400, "cursor '\(cursor)' on \(path)")
            #expect(response.problemCode == "invalid-cursor", "cursor '\(cursor)' on \(path)")
        }
        let parameters = OpenAPIDocument.document["paths"]?[path]?["get"]?["parameters"]?.array ?? []
        let cursor = parameters.compactMap { $0["$ref"]?.string }.first { $0.contains("Cursor") }
        let name = try #require(cursor?.split(separator: "/").last.map(String.init))
        let pattern = try #require(
            OpenAPIDocument.document["components"]?["parameters"]?[name]?["schema"]?["pattern"]?.string)
        let expression = try Regex(pattern)
        #expect(!"".contains(expression) && !" ".contains(expression) && !"a/b".contains(expression))
    }

    @Test func aValidAssetCursorPagesOnAndOneNamingNoAssetIsRefused() throws {
        let api = try APIFixture()
        let directory = try writePackagedAsset(in: api.fixture.scratch, directory: "imports/more", keyURI: "key.bin")
        _ = try api.gateway.importAsset(id: "more", directory: directory, keys: [], denyKeysWhileCapturing: false)
        let first = api.call("GET", "/v1/assets?limit=1", token: api.controlToken)
        let cursor = try #require(first.json?["nextCursor"]?.string)
        let rest = api.call("GET", "/v1/assets?limit=1&cursor=\(cursor)", token: api.controlToken)
        #expect(rest.status == 200 && rest.json?["items"]?.array?.count == 1)
        #expect(api.call("GET", "/v1/assets?cursor=nosuchasset", token: api.controlToken).status == 400)
    }

    @Test func anEmptyJobInputIs422AndTheSchemaSaysMinLength1() throws {
        let api = try APIFixture(engine: FakeEngine())
        let response = api.call(
            "POST", "/v1/packaging-jobs", token: api.packageToken, body: #"{"input":"","asset":"m"}"#)
        #expect(response.status == 422)
        let input = OpenAPIDocument.document["components"]?["schemas"]?["JobRequest"]?["properties"]?["input"]
        #expect(input?["minLength"] == 1)
    }

    @Test func integersAreWrittenAsIntegersUpTo2To53() throws {
        #expect(JSON.number(9_007_199_254_740_991).text == "9007199254740991")
        #expect(JSON.number(-9_007_199_254_740_991).text == "-9007199254740991")
        #expect(JSON.number(1e15).text == "1000000000000000")
        #expect(JSON.number(0.5).text == "0.5")
        let api = try APIFixture()
        let (id, token) = try api.session()
        let now = RFC3339.format(api.fixture.clock.now())
        let report = api.call(
            "PUT", "/v1/sessions/\(id)/capture-state?token=\(token)",
            body: #"{"capturing":false,"seq":9007199254740991,"observedAt":"\#(now)"}"#)
        #expect(report.status == 200)
        let text = String(decoding: report.bytes, as: UTF8.self)
        #expect(text.contains(#""seq":9007199254740991,"#) || text.contains(#""seq":9007199254740991}"#), "\(text)")
        let session = String(decoding: api.call("GET", "/v1/sessions/\(id)", token: token).bytes, as: UTF8.self)
        #expect(!session.contains("9007199254740991.0") && session.contains("9007199254740991"))
    }
}

/// Timestamps are written as RFC 3339 whatever the instant, and reports far from the clock are refused.
@Suite struct TimestampTests {
    @Test func writesInstantsBefore1970AsRFC3339() {
        #expect(RFC3339.format(Date(timeIntervalSince1970: -0.101)) == "1969-12-31T23:59:59.899Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -86_400.5)) == "1969-12-30T23:59:59.500Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        for text in ["1969-12-31T23:59:59.899Z", "1900-02-28T12:00:00.001Z", "2027-01-15T08:00:00.000Z"] {
            #expect(RFC3339.parse(text).map(RFC3339.format) == text)
        }
    }

    @Test func refusesCaptureReportsFarFromTheGatewaysClock() throws {
        let api = try APIFixture()
        let (id, token) = try api.session()
        let clock = api.fixture.clock
        func report(_ seq: Int, _ observedAt: String) -> HTTPResponse {
            api.call(
                "PUT", "/v1/sessions/\(id)/capture-state?token=\(token)",
                body: #"{"capturing":false,"seq":\#(seq),"observedAt":"\#(observedAt)"}"#)
        }
        for (seq, observedAt) in [
            (1, "1969-12-31T23:59:59.899Z"), (2, RFC3339.format(clock.now().addingTimeInterval(301))),
            (3, RFC3339.format(clock.now().addingTimeInterval(-3600))), (4, "9999-12-31T23:59:59Z"),
        ] {
            let refused = report(seq, observedAt)
            #expect(refused.status == 422 && refused.problemCode == "implausible-observed-at", "\(observedAt)")
            #expect(refused.json?["detail"]?.string?.contains(".-") == false)
        }
        #expect(api.gateway.sessions.session(id)?.capture.state == .unknown)
        #expect(report(5, RFC3339.format(clock.now().addingTimeInterval(299))).status == 200)
        #expect(report(6, RFC3339.format(clock.now().addingTimeInterval(-200))).status == 200)
        #expect(api.gateway.sessions.session(id)?.capture.state == .clear)
        // The gateway's clock decides, not the host's: move it and the same text is refused.
        let observed = RFC3339.format(clock.now())
        clock.advance(3600)
        #expect(report(7, observed).status == 422)
    }
}
