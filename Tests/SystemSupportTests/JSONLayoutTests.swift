import Foundation
import SystemSupport
import Testing

// `object` is never mutated, so sharing it between the tests is safe.
/// `--json` output keeps the bytes `JSONSerialization` wrote before the product dropped Foundation.
@Suite struct JSONLayoutTests {
    nonisolated(unsafe) static let object: [String: Any] = [
        "output": "/tmp/out dir/x", "segments": 200, "duration": 600.33, "whole": 3.0, "passed": true,
        "notices": [] as [Any], "empty": [:] as [String: Any], "small": 1.5e-7, "big": 1e20, "negative": -2,
        "text": "é\u{1}\"\\\n\t\u{8}\u{C}\r", "keyId": "ab", "keyIds": ["ab", "cd"], "keyPeriod": 10,
        "iFrames": ["checked": 3, "equal": 3], "iv": "00", "mismatchCount": 0, "mismatches": ["a"],
        "streams": [["kind": "video", "accessUnits": 18000, "frames": [1, 2.5]] as [String: Any]],
    ]

    @Test func prettySortedMatchesJSONSerialization() throws {
        let expected = try JSONSerialization.data(withJSONObject: Self.object, options: [.sortedKeys, .prettyPrinted])
        let text = try #require(JSON(any: Self.object)).text(sortingKeys: true, pretty: true)
        #expect(text == String(decoding: expected, as: UTF8.self))
    }

    @Test func compactSortedMatchesJSONSerialization() throws {
        var object = Self.object
        object["none"] = NSNull()
        let expected = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        object["none"] = JSON.null
        let text = try #require(JSON(any: object)).text(sortingKeys: true, pretty: false)
        #expect(text == String(decoding: expected, as: UTF8.self))
    }

    @Test func unknownLeafIsRefused() {
        #expect(JSON(any: ["date": Date()] as [String: Any]) == nil)
    }
}
