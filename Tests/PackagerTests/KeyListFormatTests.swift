import Packager
import Testing

/// The key list `--key-file` holds under `--key-period`, read back as written and as a Windows editor
/// would save it.
@Suite struct KeyListFormatTests {
    static let keys: [(keyID: [UInt8], key: [UInt8])] = [
        ([UInt8](repeating: 0x11, count: 16), [UInt8](repeating: 0xA1, count: 16)),
        ([UInt8](repeating: 0x22, count: 16), [UInt8](repeating: 0xB2, count: 16)),
    ]

    @Test func readsBackWhatItWritesWithLFOrCRLFLines() throws {
        let text = KeyListFormat.render(Self.keys)
        for variant in [text, text.split(separator: "\n").map { $0 + "\r\n" }.joined()] {
            let parsed = try #require(KeyListFormat.parse(Array(variant.utf8)))
            #expect(parsed.map(\.keyID) == Self.keys.map(\.keyID) && parsed.map(\.key) == Self.keys.map(\.key))
        }
    }

    @Test func refusesARepeatedKeyIDAndAShortKey() {
        let repeated = KeyListFormat.render([Self.keys[0], Self.keys[0]])
        #expect(KeyListFormat.parse(Array(repeated.utf8)) == nil)
        #expect(KeyListFormat.parse(Array("\(String(repeating: "11", count: 16)) abcd\n".utf8)) == nil)
    }
}
