import FormatTestSupport
import Testing

@testable import MediaFormats

@Suite struct EmulationPreventionTests {
    @Test(
        arguments: [
            ([0, 0, 0], [0, 0, 3, 0]),
            ([0, 0, 1], [0, 0, 3, 1]),
            ([0, 0, 2], [0, 0, 3, 2]),
            ([0, 0, 3], [0, 0, 3, 3]),
            ([0, 0, 4], [0, 0, 4]),
            ([0, 0, 0, 0], [0, 0, 3, 0, 0]),
            ([0, 0, 0, 0, 0, 0], [0, 0, 3, 0, 0, 3, 0, 0]),
            ([5, 0, 0], [5, 0, 0]),
            ([0, 0], [0, 0]),
        ] as [([UInt8], [UInt8])])
    func escapesAndUnescapesKnownVectors(_ clear: [UInt8], _ escaped: [UInt8]) {
        #expect(EmulationPrevention.escaped(clear) == escaped)
        #expect(EmulationPrevention.unescaped(escaped) == clear)
    }

    @Test(arguments: 0..<8)
    func matchesTheBytewiseReferenceOnLongData(_ seed: Int) {
        // Zero runs at every alignment exercise the eight-byte skip and its word boundaries.
        var data = Reference.bytes(5_000, seed: UInt32(seed + 100))
        var position = seed
        while position + 4 < data.count {
            for offset in 0..<(1 + position % 4) { data[position + offset] = 0 }
            data[position + 1 + position % 4] = UInt8(position % 5)
            position += 37 + position % 11
        }
        let escaped = EmulationPrevention.escaped(data)
        #expect(escaped == Reference.escape(data))
        #expect(EmulationPrevention.unescaped(escaped) == data)
    }
}

@Suite struct NALUnitSplitterTests {
    @Test func splitsLengthPrefixedSamplesIncludingLengthsThatLookLikeStartCodes() throws {
        let long = [UInt8](repeating: 0x41, count: 300)  // length 0x0000012C starts 00 00 01
        let sample: [UInt8] = [0, 0, 1, 0x2C] + long + [0, 0, 0, 2, 0x09, 0xF0]
        let ranges = try sample.withUnsafeBytes { try NALUnitSplitter.lengthPrefixed($0, lengthSize: 4) }
        #expect(ranges == [4..<304, 308..<310])
    }

    @Test func refusesALengthThatOverrunsTheSample() {
        let sample: [UInt8] = [0, 0, 0, 9, 1, 2, 3]
        #expect(throws: FormatError.self) {
            try sample.withUnsafeBytes { try NALUnitSplitter.lengthPrefixed($0, lengthSize: 4) }
        }
    }

    @Test func splitsAnnexBWithThreeAndFourByteStartCodesAndTrimsTrailingZeros() {
        let stream: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 0, 1, 0x65, 7, 0]
        let ranges = stream.withUnsafeBytes { NALUnitSplitter.annexB($0) }
        #expect(ranges == [4..<6, 9..<12, 17..<19])
    }
}

@Suite struct H264ConverterTests {
    static let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1E, 0xAC, 0xD9]
    static let pps: [UInt8] = [0x68, 0xEE, 0x3C, 0xB0]
    /// avcC: version 1, High profile 0x64, level 3.0, 4-byte lengths, one SPS, one PPS.
    static let avcC: [UInt8] = [1, 0x64, 0x00, 0x1E, 0xFF, 0xE1, 0, 6] + sps + [1, 0, 4] + pps

    @Test func parsesAvcC() throws {
        let configuration = try AVCConfiguration(extradata: Self.avcC)
        #expect(configuration.nalLengthSize == 4)
        #expect(configuration.sequenceParameterSets == [Self.sps])
        #expect(configuration.pictureParameterSets == [Self.pps])
        #expect(configuration.codecString == "avc1.64001e")
    }

    @Test func refusesATruncatedAvcC() {
        #expect(throws: FormatError.self) { try AVCConfiguration(extradata: Array(Self.avcC.dropLast(2))) }
    }

    private func lengthPrefixed(_ nals: [[UInt8]]) -> [UInt8] {
        nals.flatMap { nal in [0, 0, UInt8(nal.count >> 8), UInt8(nal.count & 0xFF)] + nal }
    }

    @Test func putsAnAUDFirstAndParameterSetsBeforeAnIDR() throws {
        var converter = try H264AnnexBConverter(extradata: Self.avcC)
        let sei: [UInt8] = [0x06, 5, 1, 0x80]
        let idr: [UInt8] = [0x65, 0x88, 0x84, 0x21]
        let unit = try #require(try lengthPrefixed([sei, idr]).withUnsafeBytes { try converter.convert($0) })
        let start: [UInt8] = [0, 0, 0, 1]
        #expect(unit.bytes == start + [0x09, 0xF0] + start + Self.sps + start + Self.pps + start + sei + start + idr)
        #expect(unit.containsIDR)
        #expect(unit.nalUnits.map { unit.bytes[$0.lowerBound] } == [0x09, 0x67, 0x68, 0x06, 0x65])
    }

    @Test func leavesNonIDRAccessUnitsWithoutParameterSets() throws {
        var converter = try H264AnnexBConverter(extradata: Self.avcC)
        let slice: [UInt8] = [0x41, 0x9A, 0x02]
        let unit = try #require(try lengthPrefixed([slice]).withUnsafeBytes { try converter.convert($0) })
        #expect(unit.bytes == [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1] + slice)
        #expect(!unit.containsIDR)
    }

    @Test func keepsInBandParameterSetsAndReplacesAnAUDOfAnnexBInput() throws {
        var converter = try H264AnnexBConverter(extradata: [])
        let idr: [UInt8] = [0x65, 0x88]
        let input: [UInt8] = [0, 0, 0, 1, 0x09, 0x10, 0, 0, 1] + Self.sps + [0, 0, 1] + Self.pps + [0, 0, 1] + idr
        let unit = try #require(try input.withUnsafeBytes { try converter.convert($0) })
        let start: [UInt8] = [0, 0, 0, 1]
        #expect(unit.bytes == start + [0x09, 0xF0] + start + Self.sps + start + Self.pps + start + idr)
        #expect(converter.codecString == "avc1.64001e")
        // A later IDR without parameter sets gets the ones seen in band.
        let next = try #require(try ([0, 0, 1] + idr).withUnsafeBytes { try converter.convert($0) })
        #expect(next.bytes == unit.bytes)
    }

    @Test func returnsNothingForAnEmptySample() throws {
        var converter = try H264AnnexBConverter(extradata: Self.avcC)
        #expect(try [UInt8]().withUnsafeBytes { try converter.convert($0) } == nil)
    }
}

@Suite struct AACFramingTests {
    @Test func buildsTheADTSHeaderFromAnAudioSpecificConfig() throws {
        let config = try AudioSpecificConfig([0x12, 0x10])  // AAC-LC, 44.1 kHz, stereo
        #expect(config.objectType == 2 && config.samplingFrequencyIndex == 4 && config.channelConfiguration == 2)
        #expect(config.codecString == "mp4a.40.2" && config.sampleAESAudioType == "zaac")
        // Frame length 107 (0x6B), buffer fullness 0x7FF, one raw data block.
        #expect(try config.adtsHeader(payloadLength: 100) == [0xFF, 0xF1, 0x50, 0x80, 0x0D, 0x7F, 0xFC])
    }

    @Test func parsesExplicitHEAACSignalling() throws {
        // AOT 5, 24 kHz core, stereo, 48 kHz extension, then AOT 2.
        let config = try AudioSpecificConfig([0x2B, 0x11, 0x88])
        #expect(config.objectType == 5 && config.coreObjectType == 2)
        #expect(config.codecString == "mp4a.40.5" && config.sampleAESAudioType == "zach")
        #expect(config.sampleRate == 24_000)
        #expect(config.adtsIncompatibility == nil)
    }

    /// Only the bits the configuration defines become SAMPLE-AES setup data: a container's padding after
    /// them is dropped (300 bytes of it used to overflow the one-byte length fields and trap), while the
    /// SBR sync extension FFmpeg's encoder writes is kept.
    @Test(
        arguments: [
            ([0x12, 0x10], [0x12, 0x10]),  // AAC-LC, 44.1 kHz, stereo: 16 bits
            ([0x12, 0x10] + [UInt8](repeating: 0, count: 300), [0x12, 0x10]),
            ([0x12, 0x10, 0x56, 0xE5, 0x00], [0x12, 0x10, 0x56, 0xE5, 0x00]),  // + 0x2B7, AOT 5, no SBR: 33 bits
            ([0x12, 0x10, 0x56, 0xE5, 0x00] + [UInt8](repeating: 0, count: 250), [0x12, 0x10, 0x56, 0xE5, 0x00]),
            ([0x2B, 0x11, 0x88, 0x00, 0x00, 0x00], [0x2B, 0x11, 0x88, 0x00]),  // explicit HE-AAC: 25 bits
            ([0x13, 0x10, 0xFF, 0xFF], [0x13, 0x10]),  // 24 kHz stereo in 16 bits; 0xFFFF is no sync extension
            ([0x12, 0x12, 0x00, 0x00, 0x00, 0x00], [0x12, 0x12, 0x00, 0x00]),  // dependsOnCoreCoder: 30 bits
        ] as [([UInt8], [UInt8])])
    func keepsOnlyTheBytesTheConfigurationUses(_ given: [UInt8], _ used: [UInt8]) throws {
        #expect(try AudioSpecificConfig(given).bytes == used)
    }

    @Test func findsWhatADTSCannotCarry() throws {
        #expect(try AudioSpecificConfig([0x11, 0x80]).adtsIncompatibility != nil)  // channel configuration 0
        #expect(try AudioSpecificConfig([0xF8, 0xE8, 0x80]).adtsIncompatibility != nil)  // AOT 39 (ER AAC ELD)
        #expect(throws: FormatError.self) { try AudioSpecificConfig([0x12]) }
    }

    @Test func splitsADTSFramesAndRefusesOverruns() throws {
        let config = try AudioSpecificConfig([0x11, 0x90])
        let frames =
            try config.adtsHeader(payloadLength: 10) + [UInt8](repeating: 1, count: 10)
            + config.adtsHeader(payloadLength: 3) + [2, 2, 2]
        let ranges = try frames.withUnsafeBytes { try ADTSHeader.frames(in: $0) }
        #expect(ranges.map(\.frame) == [0..<17, 17..<27])
        #expect(ranges.map(\.header) == [7, 7])
        #expect(throws: FormatError.self) {
            try Array(frames.dropLast()).withUnsafeBytes { try ADTSHeader.frames(in: $0) }
        }
        let derived = AudioSpecificConfig(adts: try frames.withUnsafeBytes { try ADTSHeader($0) })
        #expect(derived.bytes == [0x11, 0x90])
    }
}

@Suite struct AC3FramingTests {
    private func ac3Header(fscod: UInt8, frmsizecod: UInt8) -> [UInt8] {
        [0x0B, 0x77, 0, 0, fscod << 6 | frmsizecod, 8 << 3, 0]
    }

    @Test(arguments: [(0, 0, 128), (1, 0, 138), (1, 1, 140), (2, 37, 3_840), (0, 37, 2_560), (1, 37, 2_788)])
    func sizesAC3SyncframesFromTheA52Table(_ fscod: UInt8, _ code: UInt8, _ bytes: Int) throws {
        #expect(try ac3Header(fscod: fscod, frmsizecod: code).withUnsafeBytes { try AC3SyncFrame.length($0) } == bytes)
    }

    @Test func sizesEAC3SyncframesFromFrmsiz() throws {
        let frame = SampleAESAudioTests.eac3Frame(words: 384, dependent: false, seed: 1)
        #expect(try frame.withUnsafeBytes { try AC3SyncFrame.length($0) } == 768)
    }

    @Test func refusesAMissingSyncWord() {
        #expect(throws: FormatError.self) {
            try [0x0B, 0x78, 0, 0, 0, 0x40].withUnsafeBytes { try AC3SyncFrame.length($0) }
        }
    }

    /// `dac3` from an AC-3 bsi (ETSI TS 102 366 §F.4): 3/2 with LFE, whose cmixlev and surmixlev come
    /// before lfeon, and mono, which has neither: fscod, bsid, bsmod, acmod, lfeon, frmsizecod / 2.
    @Test(arguments: [
        ([0x0B, 0x77, 0, 0, 0x1C, 0x40, 0b1110_1101, 0] as [UInt8], [0x10, 0x3D, 0xC0] as [UInt8]),
        ([0x0B, 0x77, 0, 0, 0x45, 0x4A, 0b0010_0000, 0], [0x52, 0x88, 0x40]),
    ])
    func describesAnAC3SyncframeAsADac3Box(_ header: [UInt8], _ expected: [UInt8]) throws {
        #expect(try header.withUnsafeBytes { try AC3SyncFrame.ac3SpecificBox($0) } == expected)
    }

    @Test func readsTheSampleRateOfAC3AndReducedRateEAC3() throws {
        #expect(try ac3Header(fscod: 1, frmsizecod: 0).withUnsafeBytes { try AC3SyncFrame.sampleRate($0) } == 44_100)
        // E-AC-3 with fscod 3: fscod2 1 is half of 44.1 kHz.
        let reduced: [UInt8] = [0x0B, 0x77, 0x00, 0x5F, 0b1101_0000, 16 << 3, 0]
        #expect(try reduced.withUnsafeBytes { try AC3SyncFrame.sampleRate($0) } == 22_050)
    }

    @Test func describesAnEAC3AccessUnitAsADec3Box() throws {
        // 240 bytes of 6-block 48 kHz audio: 60 kb/s; one independent substream, bsid 16, 5.1.
        let frame = SampleAESAudioTests.eac3Frame(words: 120, dependent: false, seed: 5)
        let box = try frame.withUnsafeBytes { try AC3SyncFrame.ec3SpecificBox($0) }
        #expect(box == [0x01, 0xE0, 0x20, 0x0F, 0x00])
    }
}
