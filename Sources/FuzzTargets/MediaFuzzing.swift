import Crypto
import MediaFormats

/// The media formats: each function feeds the bytes to one reader, the way `verify` and the packager
/// meet them, and lets every refusal be a thrown error.
enum MediaFuzzing {
    /// A fixed content key and IV, so every input decrypts the same way.
    static let key = [UInt8](repeating: 0x2B, count: 16)
    static let iv = [UInt8](repeating: 0x7E, count: 16)

    /// The MPEG-TS reader, then the SAMPLE-AES decryptor over each PES payload of a stream the PMT
    /// declares, as `verify` runs them.
    static func transportStream(_ data: UnsafeRawBufferPointer) {
        var reader = TransportStreamReader(name: "fuzz.ts")
        guard var packets = try? reader.readAll(Array(data)) else { return }
        packets += reader.finish()
        guard let cipher = try? SampleAESCipher(key: key, iv: iv, encrypt: false) else { return }
        let types = Dictionary(
            (reader.programMap?.streams ?? []).map { ($0.pid, $0.streamType) }, uniquingKeysWith: { first, _ in first })
        for packet in packets {
            guard let type = types[packet.pid] else { continue }
            let codec: ElementaryCodec? =
                switch type {
                case 0x1B, 0xDB: .h264
                case 0x0F, 0xCF: .aac
                case 0x81, 0xC1: .ac3
                case 0x87, 0xC2: .eac3
                default: nil
                }
            guard let codec else { continue }
            var payload = packet.payload
            if codec == .h264 {
                _ = payload.withUnsafeBytes { try? cipher.decryptVideo($0) }
            } else {
                _ = payload.withUnsafeMutableBytes { try? cipher.processAudio($0, codec: codec) }
            }
        }
    }

    /// The H.264 readers: an avcC record, Annex-B splitting, each SPS with its CODECS string, and each
    /// slice header against the SPS and PPS collected in order, as the CMAF packager reads them.
    static func h264(_ data: UnsafeRawBufferPointer) {
        _ = try? AVCConfiguration(extradata: Array(data))
        var sets = H264SliceHeader.ParameterSets()
        for range in NALUnitSplitter.annexB(data) {
            let nal = Array(data[range])
            guard let header = nal.first else { continue }
            switch NALUnitType.of(header) {
            case NALUnitType.sequenceParameterSet:
                _ = try? H264SequenceParameterSet(nal: nal)
                _ = H264CodecString.make(sps: nal)
                try? sets.take(nal)
            case NALUnitType.pictureParameterSet:
                try? sets.take(nal)
            case NALUnitType.nonIDRSlice, NALUnitType.idrSlice:
                let slice = try? H264SliceHeader(
                    nal: UnsafeRawBufferPointer(rebasing: data[range]), parameterSets: sets)
                precondition((slice?.storedLength ?? 0) <= nal.count, "a slice header longer than its NAL unit")
            default: break
            }
        }
    }

    /// The HEVC readers: VPS, SPS and PPS collected in order, then each slice segment header against
    /// them, the previous independent segment passed on as the packager does.
    static func hevc(_ data: UnsafeRawBufferPointer) {
        var sets = HEVCParameterSets()
        var previous: HEVCSliceSegmentHeader?
        for (index, range) in NALUnitSplitter.annexB(data).enumerated() {
            let nal = Array(data[range])
            guard nal.count >= 2 else { continue }
            let type = HEVCNALHeader.type(of: nal[0])
            let place = "NAL \(index)"
            if (32...34).contains(type) {
                try? sets.add(nal, structure: place)
            } else if type < 32 {
                if let header = try? HEVCSliceSegmentHeader(nal, sets: sets, previous: previous, structure: place) {
                    previous = header
                }
            }
        }
        // The packager's path over the same bytes: read as an hvcC record, and as one Annex-B sample
        // converted and built into a CMAF sample with its clear bytes.
        _ = try? HEVCAnnexBConverter(extradata: Array(data.prefix(4_096)))
        if var converter = try? HEVCAnnexBConverter(extradata: []), let unit = try? converter.convert(data) {
            var builder = HEVCSampleBuilder()
            _ = try? builder.sample(bytes: unit.bytes, nalUnits: unit.nalUnits)
        }
    }

    /// The audio readers: ADTS frames and headers, AudioSpecificConfig, AC-3/E-AC-3 syncframes and the
    /// dec3 box, and the ID3 tag of a packed audio segment.
    static func audio(_ data: UnsafeRawBufferPointer) {
        if let frames = try? ADTSHeader.frames(in: data) {
            for frame in frames.prefix(64) {
                if let header = try? ADTSHeader(UnsafeRawBufferPointer(rebasing: data[frame.frame])) {
                    _ = try? AudioSpecificConfig(adts: header).adtsHeader(payloadLength: 100)
                }
            }
        }
        _ = try? AudioSpecificConfig(Array(data.prefix(16)))
        _ = try? AC3SyncFrame.frames(in: data)
        _ = try? AC3SyncFrame.ec3SpecificBox(data)
        if let tag = try? PackedAudio.parseTag(Array(data)) {
            precondition(tag.length <= data.count, "ID3 tag longer than its input")
        }
    }

    /// The HLS playlist parsers (media and master) and the attribute-list parser, strict and
    /// lenient, on every tag line.
    static func playlist(_ data: UnsafeRawBufferPointer) {
        guard let text = String(validating: data, as: UTF8.self) else { return }
        _ = try? ParsedMediaPlaylist(text, name: "fuzz.m3u8")
        _ = try? ParsedMasterPlaylist(text, name: "fuzz.m3u8")
        for line in text.split(separator: "\n").prefix(256) where line.hasPrefix("#EXT") {
            var lists = [AttributeList(lenientTagLine: String(line))]
            if let colon = line.firstIndex(of: ":"),
                let strict = try? AttributeList(strict: line[line.index(after: colon)...], structure: "fuzz")
            {
                lists.append(strict)
            }
            for list in lists {
                for attribute in list.attributes.prefix(32) {
                    _ = try? list.decimalInteger(attribute.name)
                    _ = try? list.hexadecimalSequence(attribute.name)
                    _ = try? list.decimalFloatingPoint(attribute.name)
                    _ = try? list.decimalResolution(attribute.name)
                    _ = try? list.quotedString(attribute.name)
                    _ = try? list.enumeratedString(attribute.name)
                }
            }
        }
    }
}
