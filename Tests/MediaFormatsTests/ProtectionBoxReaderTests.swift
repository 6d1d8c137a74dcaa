import FormatTestSupport
import Testing

@testable import MediaFormats

/// The readers of the boxes `verify` checks in CMAF output (`tenc`, `trun`, `senc`, `saiz`, `saio`), on
/// what the writer makes and on bytes it never makes.
@Suite struct ProtectionBoxReaderTests {
    static let track = FragmentedMP4WriterTests.track
    static let samples = [
        FragmentSample(
            size: 100, duration: 3_000, compositionOffset: 6_000, isSync: true,
            subsamples: [Subsample(clear: 10, protected: 90)]),
        FragmentSample(
            size: 50, duration: 2_000, isSync: false,
            subsamples: [Subsample(clear: 5, protected: 40), Subsample(clear: 5, protected: 0)]),
    ]

    /// The child of `box` (after `skip` header bytes) of each type in `path`, in turn.
    static func child(_ bytes: [UInt8], _ box: Box, _ path: [String]) throws -> Box {
        var current = box
        for type in path {
            var inner = BoxReader(bytes, range: current.body, structure: current.type)
            try inner.skip(["stsd": 8, "encv": 78].first { $0.key == current.type }?.value ?? 0)
            current = try BoxReader.one(type, in: try inner.boxes(), structure: current.type)
        }
        return current
    }

    /// A fragment's header as the writer makes it (with the samples' bytes), and its `traf` children.
    static func fragment(_ samples: [FragmentSample] = samples) throws -> (bytes: [UInt8], moof: Box, traf: [Box]) {
        let bytes =
            FragmentedMP4Writer.fragmentHeader(track, sequenceNumber: 1, baseDecodeTime: 0, samples: samples)
            + [UInt8](repeating: 0, count: samples.reduce(0) { $0 + $1.size })
        var top = BoxReader(bytes, structure: "segment")
        let moof = try top.boxes()[0]
        let traf = try child(bytes, moof, ["traf"])
        var reader = BoxReader(bytes, box: traf, structure: "")
        return (bytes, moof, try reader.boxes())
    }

    @Test func tencGivesThePatternKeyIDAndConstantIV() throws {
        let bytes = FragmentedMP4Writer.initSegment(Self.track)
        var top = BoxReader(bytes, structure: "init")
        let moov = try top.boxes()[1]
        let box = try Self.child(bytes, moov, ["trak", "mdia", "minf", "stbl", "stsd", "encv", "sinf", "schi", "tenc"])
        let tenc = try TrackEncryptionBox(bytes, box: box, structure: "init")
        #expect(tenc.version == 1 && tenc.isProtected == 1 && tenc.perSampleIVSize == 0)
        #expect((tenc.cryptBlocks, tenc.skipBlocks) == (1, 9))
        #expect(tenc.keyID == Array(repeating: 0xAB, count: 16) && tenc.constantIV == Reference.iv)
        // A constant IV said to be longer than the box holds is refused, not read past the box.
        var cut = bytes
        cut[box.body.lowerBound + 4 + 4 + 16] = 200
        let error = #expect(throws: FormatError.self) { try TrackEncryptionBox(cut, box: box, structure: "init") }
        #expect(error?.structure == "init tenc", "\(String(describing: error))")
    }

    @Test func trunSencSaizAndSaioReadWhatTheWriterWrote() throws {
        let (bytes, moof, children) = try Self.fragment()
        let run = try TrackRunBox(bytes, box: children[2], structure: "traf", defaultDuration: 0, defaultSize: 0)
        #expect(run.sizes == [100, 50] && run.durations == [3_000, 2_000] && run.totalDuration == 5_000)
        #expect(run.dataOffset == moof.range.count + 8)
        let senc = try SampleEncryptionBox(
            bytes, box: children[3], structure: "traf", ivSize: 0, sampleSizes: run.sizes)
        #expect(senc.records.map(\.subsamples) == Self.samples.map(\.subsamples))
        #expect(senc.recordSizes == [8, 14])
        let saiz = try SampleAuxiliaryInformationSizes(bytes, box: children[4], structure: "traf", sampleCount: 2)
        #expect(saiz.sizes == senc.recordSizes)
        let saio = try SampleAuxiliaryInformationOffsets(bytes, box: children[5], structure: "traf")
        #expect(saio.offsets == [senc.firstRecord - moof.range.lowerBound])
    }

    @Test func sencRefusesAMapThatDoesNotCoverItsSampleAndACountThatIsNotTruns() throws {
        let (bytes, _, children) = try Self.fragment()
        #expect(throws: FormatError("traf senc", "sample 1's subsamples cover 50 bytes of 51")) {
            try SampleEncryptionBox(bytes, box: children[3], structure: "traf", ivSize: 0, sampleSizes: [100, 51])
        }
        #expect(throws: FormatError("traf senc", "sample count is not trun's 3")) {
            try SampleEncryptionBox(bytes, box: children[3], structure: "traf", ivSize: 0, sampleSizes: [100, 50, 1])
        }
        // With 8-byte IVs the records would run past the box; the reader's error names the box once.
        let pastTheBox = #expect(throws: FormatError.self) {
            try SampleEncryptionBox(bytes, box: children[3], structure: "traf", ivSize: 8, sampleSizes: [100, 50])
        }
        #expect(pastTheBox?.structure == "traf senc", "\(String(describing: pastTheBox))")
        #expect(throws: FormatError("traf saiz", "sample count is not trun's 1")) {
            try SampleAuxiliaryInformationSizes(bytes, box: children[4], structure: "traf", sampleCount: 1)
        }
    }

    @Test func hostileCountsAreBoundedByTheBox() throws {
        var (bytes, _, children) = try Self.fragment()
        // trun: 2^32 - 1 samples in a box of a few bytes.
        let trunCount = children[2].body.lowerBound + 4
        bytes.replaceSubrange(trunCount..<(trunCount + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: FormatError.self) {
            try TrackRunBox(bytes, box: children[2], structure: "traf", defaultDuration: 1, defaultSize: 1)
        }
        // saio: 2^32 - 1 offsets in four bytes.
        let saioCount = children[5].body.lowerBound + 4
        bytes.replaceSubrange(saioCount..<(saioCount + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: FormatError("traf saio", "4294967295 offsets in 4 bytes")) {
            try SampleAuxiliaryInformationOffsets(bytes, box: children[5], structure: "traf")
        }
        // A trun without a data offset is refused: GuardPlay's fragments always carry one.
        let trunFlags = children[2].body.lowerBound + 3
        bytes[trunFlags] &= 0xFE
        #expect(throws: FormatError("traf trun", "has no data offset")) {
            try TrackRunBox(bytes, box: children[2], structure: "traf", defaultDuration: 1, defaultSize: 1)
        }
    }
}
