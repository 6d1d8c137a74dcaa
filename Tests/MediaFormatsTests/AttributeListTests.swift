import Testing

@testable import MediaFormats

/// One attribute list and what each mode reads for one name in it: the value, nil for absent, or the
/// start of the strict error's reason.
private struct Case: Sendable, CustomTestStringConvertible {
    var text: String
    var name: String
    var strict: Outcome
    var lenient: String?

    enum Outcome: Sendable, Equatable {
        case value(String?)
        case refused(String)
    }

    var testDescription: String { "\(text) [\(name)]" }
}

/// The cases where the three parsers this one replaced (the packager's, the player's PlaylistCheck and
/// the gateway's PlaylistRewriter) read the same text differently, and the plain ones they agreed on.
private let cases: [Case] = [
    Case(text: #"CODECS="avc1,mp4a",BANDWIDTH=5"#, name: "CODECS", strict: .value("avc1,mp4a"), lenient: "avc1,mp4a"),
    Case(text: #"NAME="x=y",URI="u""#, name: "NAME", strict: .value("x=y"), lenient: "x=y"),
    Case(text: #"A="",B=1"#, name: "A", strict: .value(""), lenient: ""),
    // A valueless name: the gateway read "X,CODECS" as one name and lost CODECS.
    Case(
        text: #"BANDWIDTH=5,X,CODECS="a,b""#, name: "CODECS", strict: .refused("attribute 'X' has no '='"),
        lenient: "a,b"),
    // Whitespace before a quote: the player and the gateway split the quoted comma (` "a`).
    Case(
        text: #"URI= "a,b.m3u8""#, name: "URI", strict: .refused("the value of URI holds whitespace"),
        lenient: "a,b.m3u8"),
    // A repeated name: the player and the gateway took the first, FFmpeg and hls.js take the last.
    Case(
        text: #"URI="a.m3u8",URI="b.m3u8""#, name: "URI", strict: .refused("attribute URI appears twice"),
        lenient: "b.m3u8"),
    Case(text: "A=1, B=2", name: "B", strict: .refused("whitespace around attribute name ' B'"), lenient: "2"),
    Case(text: #"uri="x""#, name: "URI", strict: .refused("'uri' is not an attribute name"), lenient: nil),
    Case(text: #"uri="x""#, name: "uri", strict: .refused("'uri' is not an attribute name"), lenient: "x"),
    Case(
        text: #"URI="open,B=1"#, name: "URI", strict: .refused("the quoted value of URI is not closed"),
        lenient: "open,B=1"),
    Case(text: #"URI="open,B=1"#, name: "B", strict: .refused("the quoted value of URI is not closed"), lenient: nil),
    // An empty unquoted value: the packager's strict parser took it as "".
    Case(text: "A=,B=2", name: "A", strict: .refused("A has an empty value"), lenient: ""),
    Case(text: "A=1,", name: "A", strict: .refused("the attribute list ends with a comma"), lenient: "1"),
    Case(text: ",A=1", name: "A", strict: .refused("an empty attribute"), lenient: "1"),
    Case(text: #"A="x"junk,B=2"#, name: "B", strict: .refused("unexpected 'junk' after A's value"), lenient: "2"),
    // Whitespace inside an unquoted value: every old parser kept "1 2"; FFmpeg stops at the space.
    Case(text: "A=1 2,B=3", name: "A", strict: .refused("the value of A holds whitespace"), lenient: "1"),
    Case(text: "A=1 2,B=3", name: "B", strict: .refused("the value of A holds whitespace"), lenient: "3"),
    Case(text: #"A=x"y"#, name: "A", strict: .refused("the unquoted value of A holds a quote"), lenient: #"x"y"#),
    // The packager's parser accepted an empty list.
    Case(text: "", name: "A", strict: .refused("the attribute list is empty"), lenient: nil),
    Case(text: "=1", name: "A", strict: .refused("an attribute has no name"), lenient: nil),
]

@Suite struct AttributeListTests {
    @Test(arguments: cases)
    fileprivate func readsEachCaseInBothModes(_ item: Case) {
        #expect(AttributeList(lenient: item.text[...])[item.name] == item.lenient)
        let strict: Case.Outcome
        do {
            strict = .value(try AttributeList(strict: item.text, structure: "t")[item.name])
        } catch {
            #expect(error.structure == "t")
            strict = .refused(error.reason)
        }
        switch (strict, item.strict) {
        case (.refused(let reason), .refused(let expected)):
            #expect(reason.hasPrefix(expected), "\(reason)")
        default: #expect(strict == item.strict)
        }
    }

    @Test func valueRangesSpliceIntoTheWholeLine() {
        var line = #"#EXT-X-MEDIA:TYPE=AUDIO,X-ALT-URI="alt.m3u8",URI="a,b.m3u8",NAME="n""#
        let list = AttributeList(lenientTagLine: line)
        #expect(list.attributes.map(\.name) == ["TYPE", "X-ALT-URI", "URI", "NAME"])
        let uri = list.attributes[2]
        #expect(line[uri.valueRange] == "a,b.m3u8" && uri.isQuoted && uri.isClosed)
        line.replaceSubrange(uri.valueRange, with: "b.m3u8?token=T")
        #expect(line == #"#EXT-X-MEDIA:TYPE=AUDIO,X-ALT-URI="alt.m3u8",URI="b.m3u8?token=T",NAME="n""#)
        #expect(AttributeList(lenientTagLine: "#EXT-X-ENDLIST").attributes.isEmpty)
        #expect(AttributeList(lenientTagLine: #"#EXT-X-KEY:URI="open"#).attributes.first?.isClosed == false)
    }

    @Test func readsTypedValues() throws {
        let text =
            #"BANDWIDTH=18446744073709551615,IV=0x0123456789ABCDEF0123456789ABCDEF,FRAME-RATE=29.970,RESOLUTION=640x360,URI="k",METHOD=SAMPLE-AES"#
        let list = try AttributeList(strict: text, structure: "t")
        #expect(try list.decimalInteger("BANDWIDTH") == UInt64.max)
        #expect(
            try list.hexadecimalSequence("IV") == [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF] + [
                0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,
            ])
        #expect(try list.decimalFloatingPoint("FRAME-RATE") == 29.97)
        #expect(try list.decimalResolution("RESOLUTION").map { [$0.width, $0.height] } == [640, 360])
        #expect(try list.quotedString("URI") == "k")
        #expect(try list.enumeratedString("METHOD") == "SAMPLE-AES")
        #expect(try list.decimalInteger("AVERAGE-BANDWIDTH") == nil)
    }

    /// Which typed accessor a case reads.
    enum Kind: Sendable { case integer, hex, float, resolution, quoted, enumerated }

    @Test(arguments: [
        (
            "BANDWIDTH=18446744073709551616", Kind.integer,
            "BANDWIDTH=18446744073709551616 is not a decimal integer (0 to 2^64-1)"
        ),
        ("BANDWIDTH=-5", .integer, "BANDWIDTH=-5 is not a decimal integer (0 to 2^64-1)"),
        (#"BANDWIDTH="5""#, .integer, "BANDWIDTH must be a decimal integer, not a quoted string"),
        ("IV=0x0a", .hex, "IV=0x0a is not 0x followed by hex digits (0-9 and A-F)"),
        ("IV=0xABC", .hex, "IV=0xABC has an odd number of hex digits"),
        ("IV=ABCD", .hex, "IV=ABCD is not 0x followed by hex digits (0-9 and A-F)"),
        ("FRAME-RATE=1e3", .float, "FRAME-RATE=1e3 is not a decimal number"),
        ("RESOLUTION=640X360", .resolution, "RESOLUTION=640X360 is not WIDTHxHEIGHT"),
        ("URI=k", .quoted, "URI must be a quoted string"),
        (#"METHOD="NONE""#, .enumerated, "METHOD must be an enumerated string, not a quoted string"),
    ])
    func refusesMistypedValuesInStrictMode(text: String, kind: Kind, reason: String) throws {
        let list = try AttributeList(strict: text, structure: "t")
        let name = String(text.prefix { $0 != "=" })
        #expect(throws: FormatError("t", reason)) {
            switch kind {
            case .integer: _ = try list.decimalInteger(name)
            case .hex: _ = try list.hexadecimalSequence(name)
            case .float: _ = try list.decimalFloatingPoint(name)
            case .resolution: _ = try list.decimalResolution(name)
            case .quoted: _ = try list.quotedString(name)
            case .enumerated: _ = try list.enumeratedString(name)
            }
        }
    }

    @Test func readsTypedValuesLeniently() throws {
        let list = AttributeList(lenient: #"IV=0x0a0B,URI=k,METHOD="NONE""#)
        #expect(try list.hexadecimalSequence("IV") == [0x0A, 0x0B])
        #expect(try list.quotedString("URI") == "k")
        #expect(try list.enumeratedString("METHOD") == "NONE")
    }
}
