import Crypto
import FormatTestSupport
import Testing

@testable import MediaFormats

@Suite struct SubsampleMapTests {
    @Test func mergesClearRunsAndKeepsProtectedRangesUnaligned() {
        // SEI, then a slice whose first 10 bytes (prefix, NAL header, slice header) stay clear.
        let map = SubsampleMap.make([(20, 20), (1_000, 10)], scheme: .cbcs)
        #expect(map == [Subsample(clear: 30, protected: 990)])
        // A non-VCL unit after the last slice is a clear subsample of its own.
        let tail = SubsampleMap.make([(100, 9), (30, 30)], scheme: .cbcs)
        #expect(tail == [Subsample(clear: 9, protected: 91), Subsample(clear: 30, protected: 0)])
        #expect(SubsampleMap.make([(40, 40)], scheme: .cbcs) == [Subsample(clear: 40, protected: 0)])
    }

    @Test func cencMovesTheRemainderOfEachRangeToTheClearBytes() {
        let map = SubsampleMap.make([(20, 20), (1_000, 10), (300, 7)], scheme: .cenc)
        #expect(
            map == [
                Subsample(clear: 30 + 990 % 16, protected: 990 / 16 * 16),
                Subsample(clear: 7 + 293 % 16, protected: 288),
            ])
        #expect(map.allSatisfy { $0.protected % 16 == 0 })
    }

    @Test func splitsClearRunsOverSixteenBits() {
        let map = SubsampleMap.make([(70_000, 70_000), (100, 8)], scheme: .cbcs)
        #expect(map == [Subsample(clear: 65_535, protected: 0), Subsample(clear: 70_008 - 65_535, protected: 92)])
        let long = SubsampleMap.make([(140_000, 140_000)], scheme: .cbcs)
        #expect(long.map(\.clear) == [65_535, 65_535, 8_930] && long.allSatisfy { $0.protected == 0 })
    }
}

@Suite struct CENCSampleCipherTests {
    /// cbcs by hand: in each protected range a CBC chain from the constant IV over blocks 0, 160, 320…
    /// of the range, each encrypted when 16 bytes remain for it.
    static func referenceCBCS(_ plain: [UInt8], ranges: [Range<Int>]) -> [UInt8] {
        var out = plain
        for range in ranges {
            var chain = Reference.iv
            var offset = range.lowerBound
            while range.upperBound - offset >= 16 {
                chain = Reference.encryptBlock(Array(plain[offset..<(offset + 16)]), chain: chain)
                out.replaceSubrange(offset..<(offset + 16), with: chain)
                offset += 160
            }
        }
        return out
    }

    @Test(arguments: [
        // The second range's 16-byte tail is a whole crypt block: encrypted (cbcs, unlike TS SAMPLE-AES).
        [Subsample(clear: 5, protected: 176), Subsample(clear: 3, protected: 40)],
        [Subsample(clear: 1, protected: 15), Subsample(clear: 2, protected: 16)],
        [Subsample(clear: 65_535, protected: 0), Subsample(clear: 9, protected: 500)],
    ])
    func cbcsVideoRestartsPatternAndIVAtEverySubsample(_ subsamples: [Subsample]) throws {
        let length = subsamples.reduce(0) { $0 + $1.clear + $1.protected }
        let plain = Reference.bytes(length, seed: 3)
        var ranges: [Range<Int>] = []
        var offset = 0
        for subsample in subsamples {
            offset += subsample.clear
            ranges.append(offset..<(offset + subsample.protected))
            offset += subsample.protected
        }
        var sample = plain
        try CENCSampleCipher(scheme: .cbcs, key: Reference.key, encrypt: true).process(
            &sample, subsamples: subsamples, iv: Reference.iv)
        #expect(sample == Self.referenceCBCS(plain, ranges: ranges))
        try CENCSampleCipher(scheme: .cbcs, key: Reference.key, encrypt: false).process(
            &sample, subsamples: subsamples, iv: Reference.iv)
        #expect(sample == plain)
    }

    /// Other patterns (which `verify` meets in foreign files): 2:3 and 5:5 over ranges that end inside a
    /// crypt run, on a block boundary and inside a skip run. Each crypt run is one link of the chain, cut
    /// to the whole blocks left.
    @Test(arguments: [(2, 3, 185), (2, 3, 176), (2, 3, 208), (5, 5, 330), (5, 5, 16)])
    func cbcsOtherPatternsChainTheirCryptRuns(crypt: Int, skip: Int, length: Int) throws {
        let plain = Reference.bytes(length + 7, seed: 6)
        var sample = plain
        try CENCSampleCipher(scheme: .cbcs, key: Reference.key, encrypt: true).process(
            &sample, subsamples: [Subsample(clear: 7, protected: length)], iv: Reference.iv, crypt: crypt, skip: skip)
        var expected = plain
        var chain = Reference.iv
        for block in 0..<(length / 16) where block % (crypt + skip) < crypt {
            let offset = 7 + 16 * block
            chain = Reference.encryptBlock(Array(plain[offset..<(offset + 16)]), chain: chain)
            expected.replaceSubrange(offset..<(offset + 16), with: chain)
        }
        #expect(sample == expected)
        #expect(sample != plain)
    }

    @Test func cbcsAudioEncryptsEveryWholeBlockAndLeavesTheTail() throws {
        let plain = Reference.bytes(50, seed: 4)
        var sample = plain
        try CENCSampleCipher(scheme: .cbcs, key: Reference.key, encrypt: true).process(
            &sample, subsamples: [], iv: Reference.iv, crypt: 0, skip: 0)
        var chain = Reference.iv
        var expected = plain
        for block in stride(from: 0, to: 48, by: 16) {
            chain = Reference.encryptBlock(Array(plain[block..<(block + 16)]), chain: chain)
            expected.replaceSubrange(block..<(block + 16), with: chain)
        }
        #expect(sample == expected)
        #expect(sample[48...] == plain[48...])
    }

    @Test func cencRunsOneKeyStreamOverTheProtectedRanges() throws {
        let plain = Reference.bytes(300, seed: 5)
        let subsamples = [
            Subsample(clear: 12, protected: 32), Subsample(clear: 200, protected: 48),
            Subsample(clear: 8, protected: 0),
        ]
        let iv: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        var sample = plain
        try CENCSampleCipher(scheme: .cenc, key: Reference.key, encrypt: true).process(
            &sample, subsamples: subsamples, iv: iv)
        // The protected bytes, joined, are the CTR encryption of the joined plaintext from IV ‖ 0.
        var joined = Array(plain[12..<44] + plain[244..<292])
        let ctr = try AESCTR(key: Reference.key)
        try ctr.restart(counter: iv + [UInt8](repeating: 0, count: 8))
        try ctr.process(&joined, range: 0..<joined.count)
        #expect(Array(sample[12..<44] + sample[244..<292]) == joined)
        #expect(
            sample[0..<12] == plain[0..<12] && sample[44..<244] == plain[44..<244] && sample[292...] == plain[292...])
        #expect(throws: CryptoError.self) {
            var short = Array(plain.prefix(100))
            try CENCSampleCipher(scheme: .cenc, key: Reference.key, encrypt: true).process(
                &short, subsamples: subsamples, iv: iv)
        }
    }
}

@Suite struct FragmentedMP4WriterTests {
    static let track = FragmentedTrack(
        media: .h264(width: 640, height: 360, configuration: [1, 0x64, 0, 0x1E, 0xFF, 0xE0, 0]), timescale: 90_000,
        encryption: TrackEncryption(
            scheme: .cbcs, keyID: Array(repeating: 0xAB, count: 16), constantIV: Reference.iv, cryptBlocks: 1,
            skipBlocks: 9))

    @Test func initSegmentCarriesTheProtectionSchemeInfo() throws {
        let bytes = FragmentedMP4Writer.initSegment(Self.track)
        var reader = BoxReader(bytes, structure: "init")
        let top = try reader.boxes()
        #expect(top.map(\.type) == ["ftyp", "moov"])
        func child(_ box: Box, _ path: [String], skip: Int = 0) throws -> Box {
            var current = box
            for type in path {
                var inner = BoxReader(bytes, range: current.body, structure: current.type)
                try inner.skip(["stsd": 8, "encv": 78].first { $0.key == current.type }?.value ?? 0)
                current = try BoxReader.one(type, in: try inner.boxes(), structure: current.type)
            }
            return current
        }
        let entry = try child(top[1], ["trak", "mdia", "minf", "stbl", "stsd", "encv"])
        let sinf = try child(entry, ["sinf"])
        var frma = BoxReader(bytes, box: try child(sinf, ["frma"]), structure: "")
        #expect(try frma.fourCC() == "avc1")
        var schm = BoxReader(bytes, box: try child(sinf, ["schm"]), structure: "")
        _ = try schm.versionAndFlags()
        #expect(try schm.fourCC() == "cbcs")
        #expect(try schm.u32() == 0x0001_0000)
        var tenc = BoxReader(bytes, box: try child(sinf, ["schi", "tenc"]), structure: "")
        #expect(try tenc.versionAndFlags().version == 1)
        #expect(try tenc.u8() == 0)
        #expect(try tenc.u8() == 0x19)  // 1:9
        #expect(try tenc.u8() == 1)  // protected
        #expect(try tenc.u8() == 0)  // no per-sample IV
        #expect(try tenc.data(16) == Array(repeating: 0xAB, count: 16))
        #expect(try tenc.u8() == 16)
        #expect(try tenc.data(16) == Reference.iv)
        #expect(tenc.remaining == 0)
    }

    @Test func saioPointsAtTheFirstSencRecordAndTrunAtTheFirstSample() throws {
        let samples = [
            FragmentSample(
                size: 100, duration: 3_000, compositionOffset: 6_000, isSync: true,
                subsamples: [Subsample(clear: 10, protected: 90)]),
            FragmentSample(
                size: 50, duration: 3_000, isSync: false,
                subsamples: [Subsample(clear: 5, protected: 40), Subsample(clear: 5, protected: 0)]),
        ]
        // The header, then the samples' 150 bytes the caller appends.
        let header =
            FragmentedMP4Writer.fragmentHeader(Self.track, sequenceNumber: 7, baseDecodeTime: 1 << 33, samples: samples)
            + [UInt8](repeating: 0, count: 150)
        var reader = BoxReader(header, structure: "segment")
        let top = try reader.boxes()
        #expect(top.map(\.type) == ["moof", "mdat"])
        #expect(top[1].range.count == 8 + 150)  // the mdat header declares the samples' bytes
        var moof = BoxReader(header, box: top[0], structure: "")
        let traf = try BoxReader.one("traf", in: try moof.boxes(), structure: "moof")
        var trafReader = BoxReader(header, box: traf, structure: "")
        let children = try trafReader.boxes()
        #expect(children.map(\.type) == ["tfhd", "tfdt", "trun", "senc", "saiz", "saio"])
        var tfdt = BoxReader(header, box: children[1], structure: "")
        _ = try tfdt.versionAndFlags()
        #expect(try tfdt.u64() == 1 << 33)
        var trun = BoxReader(header, box: children[2], structure: "")
        _ = try trun.versionAndFlags()
        #expect(try trun.u32() == 2)
        #expect(Int(try trun.u32()) == top[0].range.count + 8)
        var saio = BoxReader(header, box: children[5], structure: "")
        _ = try saio.versionAndFlags()
        #expect(try saio.u32() == 1)
        let offset = Int(try saio.u32())
        #expect(offset == children[3].body.lowerBound + 8)  // after senc's version, flags and count
        #expect(header.bigEndianUInt16(at: offset) == 1 && header.bigEndianUInt16(at: offset + 2) == 10)
        var saiz = BoxReader(header, box: children[4], structure: "")
        _ = try saiz.versionAndFlags()
        #expect(try saiz.u8() == 0)
        #expect(try saiz.u32() == 2)
        #expect(try saiz.data(2) == [8, 14])
    }

    @Test func readerRefusesBoxesThatOverrunTheirParent() {
        var bytes: [UInt8] = [0, 0, 0, 40]
        bytes.appendFourCC("moof")
        bytes += [UInt8](repeating: 0, count: 8)
        var reader = BoxReader(bytes, structure: "segment")
        #expect(throws: FormatError.self) { try reader.boxes() }
    }
}
