import MediaFormats
import Testing

@testable import Packager

@Suite struct InputCheckTests {
    @Test func mapsUnsupportedFormatErrorsToAnUnsupportedCodecAndMalformedOnesToCorruptInput() {
        let unsupported = FormatError("NAL 3", "field_seq_flag is set", kind: .unsupported)
        let refused = InputCheck.classify(unsupported, path: "in.mkv")
        #expect(refused.kind == .unsupportedCodec)
        #expect(refused.message.contains("NAL 3: field_seq_flag is set"))
        let malformed = InputCheck.classify(FormatError("hvcC", "3 bytes, at least 23 expected"), path: "in.mkv")
        #expect(malformed.kind == .inputCorrupt && malformed.message.contains("hvcC: 3 bytes"))
    }
}
