/// The sampling frequencies an AAC sampling_frequency_index can name (ISO/IEC 14496-3 Table 1.18).
public let aacSamplingFrequencies = [
    96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
]

/// An MPEG-4 AudioSpecificConfig, the AAC codec configuration MP4 carries and ADTS headers repeat.
public struct AudioSpecificConfig: Equatable, Sendable {
    /// The audio object type as signalled: 2 (AAC-LC), 5 (HE-AAC, SBR) or 29 (HE-AACv2, PS), and so on.
    public var objectType: Int
    /// The object type of the AAC core: the signalled type, or the one under explicit SBR/PS signalling.
    public var coreObjectType: Int
    /// The index of the core sampling frequency.
    public var samplingFrequencyIndex: Int
    /// The channel configuration (1–7); 0 means a program config element, which ADTS cannot carry.
    public var channelConfiguration: Int
    /// The bytes the configuration occupies (or was built as), for the setup data of SAMPLE-AES
    /// signalling: for the AAC object types ADTS can carry, only the bits the configuration defines,
    /// without the padding a container may append after them.
    public var bytes: [UInt8]

    /// Parses an AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1, with GASpecificConfig §4.4.1 for the
    /// object types ADTS can carry).
    public init(_ bytes: [UInt8]) throws(FormatError) {
        var reader = BitReader(bytes, structure: "AudioSpecificConfig")
        func objectType() throws(FormatError) -> Int {
            let type = Int(try reader.read(5))
            return type == 31 ? 32 + Int(try reader.read(6)) : type
        }
        func frequencyIndex() throws(FormatError) -> Int {
            let index = Int(try reader.read(4))
            guard index == 15 else { return index }
            let frequency = Int(try reader.read(24))
            guard let standard = aacSamplingFrequencies.firstIndex(of: frequency) else {
                throw FormatError("AudioSpecificConfig", "sampling frequency \(frequency) Hz has no ADTS index")
            }
            return standard
        }
        self.objectType = try objectType()
        samplingFrequencyIndex = try frequencyIndex()
        channelConfiguration = Int(try reader.read(4))
        coreObjectType = self.objectType
        if self.objectType == 5 || self.objectType == 29 {
            _ = try frequencyIndex()  // the extension (SBR) frequency
            coreObjectType = try objectType()
        }
        guard samplingFrequencyIndex < aacSamplingFrequencies.count else {
            throw FormatError("AudioSpecificConfig", "sampling frequency index \(samplingFrequencyIndex) is reserved")
        }
        var used = bytes.count
        if (1...4).contains(coreObjectType) && channelConfiguration != 0 {
            // GASpecificConfig of AAC Main, LC, SSR and LTP: frameLengthFlag, dependsOnCoreCoder (and
            // its 14-bit coreCoderDelay), extensionFlag (and extensionFlag3); no program config element
            // with a channel configuration. A configuration cut short inside them is kept whole (it
            // is short anyway); decoders fed by ADTS never read these fields.
            do {
                try reader.skip(1)
                if try reader.flag() { try reader.skip(14) }
                if try reader.flag() { try reader.skip(1) }
                if self.objectType == coreObjectType { try AudioSpecificConfig.skipSyncExtension(&reader) }
                used = (reader.position + 7) / 8
            } catch {
                used = bytes.count
            }
        }
        self.bytes = Array(bytes.prefix(used))
    }

    /// Skips the backward-compatible SBR/PS signalling (syncExtensionType 0x2B7, then 0x548) that may
    /// directly follow the GASpecificConfig; anything else after it is padding no decoder reads.
    private static func skipSyncExtension(_ reader: inout BitReader) throws(FormatError) {
        guard reader.remaining >= 16 else { return }
        var probe = reader
        guard try probe.read(11) == 0x2B7 else { return }
        var extensionType = Int(try probe.read(5))
        if extensionType == 31 { extensionType = 32 + Int(try probe.read(6)) }
        if extensionType == 5, try probe.flag() {
            if try probe.read(4) == 15 { try probe.skip(24) }  // extensionSamplingFrequency
            if probe.remaining >= 12 {
                var ps = probe
                if try ps.read(11) == 0x548 {
                    try ps.skip(1)  // psPresentFlag
                    probe = ps
                }
            }
        }
        reader = probe
    }

    /// The config an ADTS header implies: AAC profile, sampling frequency index and channels.
    public init(adts header: ADTSHeader) {
        var writer = BitWriter()
        writer.write(UInt32(header.profile + 1), bits: 5)
        writer.write(UInt32(header.samplingFrequencyIndex), bits: 4)
        writer.write(UInt32(header.channelConfiguration), bits: 4)
        writer.write(0, bits: 3)
        objectType = header.profile + 1
        coreObjectType = objectType
        samplingFrequencyIndex = header.samplingFrequencyIndex
        channelConfiguration = header.channelConfiguration
        bytes = writer.bytes
    }

    /// Why ADTS cannot carry this configuration, or nil when it can.
    public var adtsIncompatibility: String? {
        if !(1...4).contains(coreObjectType) { return "audio object type \(coreObjectType) has no ADTS profile" }
        if channelConfiguration == 0 { return "a program config element (channel configuration 0)" }
        return nil
    }

    /// The sampling frequency of the AAC core, in Hz.
    public var sampleRate: Int { aacSamplingFrequencies[samplingFrequencyIndex] }

    /// The RFC 6381 codec string, such as `mp4a.40.2`.
    public var codecString: String { "mp4a.40.\(objectType)" }

    /// The SAMPLE-AES audio_type: `zaac` (AAC-LC), `zach` (HE-AAC) or `zacp` (HE-AACv2).
    public var sampleAESAudioType: String {
        switch objectType {
        case 5: "zach"
        case 29: "zacp"
        default: "zaac"
        }
    }

    /// A 7-byte ADTS header (no CRC) for a raw frame of `payloadLength` bytes.
    public func adtsHeader(payloadLength: Int) throws(FormatError) -> [UInt8] {
        if let problem = adtsIncompatibility { throw FormatError("ADTS header", "cannot describe \(problem)") }
        let frameLength = payloadLength + ADTSHeader.sizeWithoutCRC
        guard frameLength < 1 << 13 else {
            throw FormatError("ADTS header", "an AAC frame of \(payloadLength) bytes exceeds ADTS's 8191-byte limit")
        }
        var writer = BitWriter()
        writer.write(0xFFF, bits: 12)  // syncword
        writer.write(0, bits: 1)  // MPEG-4
        writer.write(0, bits: 2)  // layer
        writer.write(1, bits: 1)  // protection absent: no CRC
        writer.write(UInt32(coreObjectType - 1), bits: 2)
        writer.write(UInt32(samplingFrequencyIndex), bits: 4)
        writer.write(0, bits: 1)  // private bit
        writer.write(UInt32(channelConfiguration), bits: 3)
        writer.write(0, bits: 4)  // original/copy, home, copyright id bit and start
        writer.write(UInt32(frameLength), bits: 13)
        writer.write(0x7FF, bits: 11)  // buffer fullness: variable bit rate
        writer.write(0, bits: 2)  // one raw data block
        return writer.bytes
    }
}

/// A parsed ADTS frame header (ISO/IEC 13818-7 / 14496-3 §1.A.2).
public struct ADTSHeader: Equatable, Sendable {
    /// Bytes in a header without CRC.
    public static let sizeWithoutCRC = 7

    /// The AAC profile (object type − 1).
    public var profile: Int
    /// The sampling frequency index.
    public var samplingFrequencyIndex: Int
    /// The channel configuration.
    public var channelConfiguration: Int
    /// The whole frame's length, header included.
    public var frameLength: Int
    /// The header's length: 7, or 9 with a CRC.
    public var headerLength: Int

    /// Parses the header at the start of `bytes`.
    public init(_ bytes: UnsafeRawBufferPointer) throws(FormatError) {
        guard bytes.count >= ADTSHeader.sizeWithoutCRC else {
            throw FormatError("ADTS header", "only \(bytes.count) bytes, 7 needed")
        }
        guard bytes[0] == 0xFF && bytes[1] & 0xF6 == 0xF0 else {
            throw FormatError("ADTS header", "no syncword (found \(Array(bytes[0..<2]).hexString))")
        }
        headerLength = bytes[1] & 0x01 == 1 ? 7 : 9
        profile = Int(bytes[2] >> 6)
        samplingFrequencyIndex = Int((bytes[2] >> 2) & 0x0F)
        channelConfiguration = Int((bytes[2] & 0x01) << 2 | bytes[3] >> 6)
        frameLength = Int(bytes[3] & 0x03) << 11 | Int(bytes[4]) << 3 | Int(bytes[5] >> 5)
        guard samplingFrequencyIndex < aacSamplingFrequencies.count else {
            throw FormatError("ADTS header", "sampling frequency index \(samplingFrequencyIndex) is reserved")
        }
        guard frameLength >= headerLength else {
            throw FormatError("ADTS header", "frame length \(frameLength) is shorter than the header")
        }
    }

    /// The ranges of the consecutive ADTS frames that make up `bytes`.
    public static func frames(in bytes: UnsafeRawBufferPointer) throws(FormatError) -> [(
        frame: Range<Int>, header: Int
    )] {
        var frames: [(frame: Range<Int>, header: Int)] = []
        var offset = 0
        while offset < bytes.count {
            let header = try ADTSHeader(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            guard header.frameLength <= bytes.count - offset else {
                throw FormatError(
                    "ADTS frame",
                    "frame of \(header.frameLength) bytes overruns its packet (\(bytes.count - offset) left)")
            }
            frames.append((offset..<(offset + header.frameLength), header.headerLength))
            offset += header.frameLength
        }
        return frames
    }
}
