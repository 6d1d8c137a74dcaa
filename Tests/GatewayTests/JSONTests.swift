import Foundation
import HTTPServer
import Synchronization
import Testing

@testable import ControlAPI

/// The request-body JSON parser on hostile shapes: many members must cost linear time, so a body at
/// the largest `--max-body` cannot pin a worker.
@Suite struct JSONTests {
    /// `{"k0":0,"k1":0,…}` with `count` distinct members, then `tail` (or `"last":1`) before the brace.
    static func object(members count: Int, tail: String = #""last":1"#) -> [UInt8] {
        var text = "{"
        text.reserveCapacity(count * 12)
        for index in 0..<count { text += "\"k\(index)\":0," }
        return Array((text + tail + "}").utf8)
    }

    /// What `work` returns, when it returns within `deadline` seconds; nil (and the work left running
    /// on its own thread) when it does not. The deadline is generous: it is there so that a parser
    /// that scans every earlier member for each new one (2·10¹⁰ string comparisons for 200,000
    /// members, many minutes) fails the test instead of hanging the run.
    static func result<T: Sendable>(within deadline: Double = 60, _ work: @escaping @Sendable () -> T) -> T? {
        let outcome = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let value = work()
            outcome.withLock { $0 = value }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + deadline) == .success else { return nil }
        return outcome.withLock { $0 }
    }

    @Test func parsesAnObjectOfManyMembers() throws {
        let bytes = Self.object(members: 200_000)
        let value = try #require(Self.result { try? JSON.parse(bytes) }, "parsing 200,000 members did not finish")
        #expect(value?.members?.count == 200_001)
        #expect(value?["k199999"] == 0 && value?["last"] == 1)
    }

    @Test func findsADuplicateAfterManyMembers() throws {
        let bytes = Self.object(members: 200_000, tail: #""k123456":1"#)
        let outcome = Self.result { () -> Result<JSON, JSONParseError> in
            do throws(JSONParseError) { return .success(try JSON.parse(bytes)) } catch { return .failure(error) }
        }
        guard case .failure(let failure) = try #require(outcome, "parsing 200,000 members did not finish") else {
            Issue.record("a duplicate member was accepted")
            return
        }
        #expect(failure.reason == "duplicate member 'k123456'")
        // The offset is the ':' after the repeated name.
        #expect(failure.offset == bytes.count - 3)
    }

    @Test func answersABodyOfManyMembersPromptly() throws {
        let api = try APIFixture()
        defer { withExtendedLifetime(api) {} }
        let router = api.router
        func post(_ body: [UInt8]) -> HTTPRequest {
            HTTPRequest(
                method: "POST", target: "/v1/sessions",
                headers: HTTPHeaders([
                    ("Host", "gw.test"), ("Authorization", "Bearer \(api.controlToken)"),
                    ("Content-Type", "application/json"),
                ]), body: body)
        }
        let many = post(Self.object(members: 200_000))
        let unknown = try #require(Self.result { router.respond(to: many) }, "no answer to 200,000 members")
        #expect(unknown.status == 422 && unknown.problemCode == "invalid-field", "\(unknown.json ?? .null)")
        let duplicate = post(Self.object(members: 200_000, tail: #""k7":1"#))
        let refused = try #require(Self.result { router.respond(to: duplicate) }, "no answer to 200,000 members")
        #expect(refused.status == 400 && refused.problemCode == "invalid-json")
    }

    @Test func refusesDuplicatesAtAnyDepthAndKeepsMessagesShort() throws {
        #expect(throws: JSONParseError.self) { _ = try JSON.parse(Array(#"{"a":{"b":1,"b":2}}"#.utf8)) }
        #expect(try JSON.parse(Array(#"{"a":{"b":1},"b":{"a":2}}"#.utf8))["b"]?["a"] == 2)
        let long = String(repeating: "x", count: 10_000)
        #expect {
            _ = try JSON.parse(Array(#"{"\#(long)":1,"\#(long)":2}"#.utf8))
        } throws: { error in
            "\(error)".utf8.count < 200
        }
    }
}
