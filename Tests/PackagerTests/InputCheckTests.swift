import Glibc
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

    /// A FIFO given as the input is left to the demuxer: the preflight takes none of its bytes (it took the
    /// first 16, looking for a playlist, which cut the stream's first TS packet) and does not wait for a
    /// writer.
    @Test func thePreflightReadsNothingFromAFIFO() throws {
        let scratch = try Scratch()
        let path = scratch.path + "/input.ts"
        try #require(mkfifo(path, 0o600) == 0)
        // Read and write ends held here (O_RDWR does not wait), with bytes waiting in the pipe.
        let descriptor = open(path, O_RDWR | O_NONBLOCK)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let sent = (0..<188).map { UInt8(truncatingIfNeeded: $0 == 0 ? 0x47 : $0) }
        try #require(sent.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == sent.count)
        try InputCheck.preflight(path)
        var received = [UInt8](repeating: 0, count: 400)
        let count = received.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        #expect(count == sent.count)
        #expect(Array(received.prefix(max(count, 0))) == sent)
    }
}
