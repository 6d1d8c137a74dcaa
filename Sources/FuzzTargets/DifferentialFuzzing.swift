import Crypto
import MediaFormats

/// Package, then verify, a random valid stream, through the pieces the packager and `verify` run below
/// their FFmpeg demuxing: H.264 access units (an AUD, SPS and PPS before each IDR picture, slices of
/// random sizes whose random bytes are escaped, so emulation prevention bytes fall anywhere) and AAC
/// ADTS frames. Each is packaged as TS SAMPLE-AES (`SampleAESCipher.encryptVideo`/`processAudio`,
/// `TransportStreamWriter`) and as CMAF `cbcs` and `cenc` (`H264SampleBuilder`, `SubsampleMap`,
/// `CENCSampleCipher`, `FragmentedMP4Writer`), then read back and decrypted by the verifier's readers
/// (`TransportStreamReader` and `decryptVideo`; `BoxReader`, `tenc`, `trun`, `senc`, `saiz`, `saio`,
/// the slice-header clear ranges): every NAL unit, frame and sample must come back bit for bit.
enum DifferentialFuzzing {
    /// One access unit of the synthetic stream: Annex-B bytes and its NAL units' ranges.
    struct AccessUnit {
        var bytes: [UInt8]
        var nalUnits: [Range<Int>]
        var isIDR: Bool
    }

    static func packageThenVerify(_ data: UnsafeRawBufferPointer) {
        var input = FuzzBytes(data)
        let video = accessUnits(&input)
        let audio = adtsFrames(&input)
        transportStream(video: video, audio: audio)
        let fragmentLength = input.int(in: 1...8)
        for scheme in [CENCScheme.cbcs, .cenc] {
            fragmented(video: video, audio: audio, scheme: scheme, fragmentLength: fragmentLength)
        }
        // An HEVC stream drawn from the same bytes (HEVC is CMAF only).
        var hevcInput = FuzzBytes(data)
        let hevc = hevcAccessUnits(&hevcInput)
        for scheme in [CENCScheme.cbcs, .cenc] { fragmentedHEVC(hevc, scheme: scheme, fragmentLength: fragmentLength) }
    }

    // MARK: The stream

    /// Writes RBSP syntax elements (H.264 §7.2).
    struct SyntaxWriter {
        private var writer = BitWriter()

        mutating func u(_ value: Int, _ bits: Int) { writer.write(UInt32(truncatingIfNeeded: value), bits: bits) }
        mutating func ue(_ value: Int) { writer.writeUnsignedExpGolomb(value) }
        mutating func se(_ value: Int) { writer.writeSignedExpGolomb(value) }

        /// The NAL unit with `header`: the elements written, then `payload` (slice data), then the
        /// RBSP trailing bits, escaped as an encoder escapes them.
        func nal(_ header: UInt8, payload: [UInt8] = []) -> [UInt8] {
            var rbsp = self
            rbsp.writer.reserveCapacity(rbsp.writer.bytes.count + payload.count + 1)
            for byte in payload { rbsp.u(Int(byte), 8) }
            return [header] + EmulationPrevention.escaped(rbsp.aligned())
        }

        /// The elements written, then a one bit and zero bits to the byte boundary
        /// (`rbsp_trailing_bits()`, or an H.265 slice segment header's `byte_alignment()`).
        func aligned() -> [UInt8] {
            var copy = self
            copy.u(1, 1)
            while copy.writer.bitCount % 8 != 0 { copy.u(0, 1) }
            return copy.writer.bytes
        }
    }

    /// A baseline SPS of `widthMBs` × `heightMBs` macroblocks: 4-bit frame_num, POC type 2.
    static func sequenceParameterSet(widthMBs: Int, heightMBs: Int) -> [UInt8] {
        var sps = SyntaxWriter()
        sps.u(66, 8)  // profile_idc: Baseline
        sps.u(0xC0, 8)  // constraint_set0/1
        sps.u(30, 8)  // level_idc
        sps.ue(0)  // seq_parameter_set_id
        sps.ue(0)  // log2_max_frame_num_minus4
        sps.ue(2)  // pic_order_cnt_type
        sps.ue(1)  // max_num_ref_frames
        sps.u(0, 1)  // gaps_in_frame_num_value_allowed_flag
        sps.ue(widthMBs - 1)
        sps.ue(heightMBs - 1)
        sps.u(1, 1)  // frame_mbs_only_flag
        sps.u(1, 1)  // direct_8x8_inference_flag
        sps.u(0, 1)  // frame_cropping_flag
        sps.u(0, 1)  // vui_parameters_present_flag
        return sps.nal(0x67)
    }

    /// The PPS: CAVLC, one slice group, deblocking control present.
    static let pictureParameterSet: [UInt8] = {
        var pps = SyntaxWriter()
        pps.ue(0)  // pic_parameter_set_id
        pps.ue(0)  // seq_parameter_set_id
        pps.u(0, 1)  // entropy_coding_mode_flag
        pps.u(0, 1)  // bottom_field_pic_order_in_frame_present_flag
        pps.ue(0)  // num_slice_groups_minus1
        pps.ue(0)  // num_ref_idx_l0_default_active_minus1
        pps.ue(0)  // num_ref_idx_l1_default_active_minus1
        pps.u(0, 1)  // weighted_pred_flag
        pps.u(0, 2)  // weighted_bipred_idc
        pps.se(0)  // pic_init_qp_minus26
        pps.se(0)  // pic_init_qs_minus26
        pps.se(0)  // chroma_qp_index_offset
        pps.u(1, 1)  // deblocking_filter_control_present_flag
        pps.u(0, 1)  // constrained_intra_pred_flag
        pps.u(0, 1)  // redundant_pic_cnt_present_flag
        return pps.nal(0x68)
    }()

    /// A slice NAL unit: its header for the SPS and PPS above, then `payload` as slice data.
    static func slice(idr: Bool, frameNumber: Int, firstMB: Int, qpDelta: Int, payload: [UInt8]) -> [UInt8] {
        var slice = SyntaxWriter()
        slice.ue(firstMB)
        slice.ue(idr ? 7 : 5)  // I or P, all slices of the picture alike
        slice.ue(0)  // pic_parameter_set_id
        slice.u(idr ? 0 : frameNumber, 4)
        if idr { slice.ue(0) }  // idr_pic_id
        if !idr {
            slice.u(0, 1)  // num_ref_idx_active_override_flag
            slice.u(0, 1)  // ref_pic_list_modification_flag_l0
        }
        slice.u(0, idr ? 2 : 1)  // dec_ref_pic_marking: no_output_of_prior_pics, long_term_reference; or adaptive
        slice.se(qpDelta)
        slice.ue(1)  // disable_deblocking_filter_idc
        return slice.nal(idr ? 0x65 : 0x41, payload: payload)
    }

    /// Up to 12 access units, the first an IDR picture.
    static func accessUnits(_ input: inout FuzzBytes) -> [AccessUnit] {
        let sps = sequenceParameterSet(widthMBs: input.int(in: 1...120), heightMBs: input.int(in: 1...68))
        var units: [AccessUnit] = []
        for index in 0..<input.int(in: 1...12) {
            let idr = index == 0 || input.int(in: 0...7) == 0
            var nals: [[UInt8]] = [[0x09, 0xF0]]
            if idr { nals += [sps, pictureParameterSet] }
            if input.int(in: 0...3) == 0 {
                nals.append(SyntaxWriter().nal(0x06, payload: input.bytes(input.int(in: 1...40))))
            }
            for slice in 0..<input.int(in: 1...3) {
                // Slice data: random bytes with runs of zeros, so the escaping puts 0x03 bytes anywhere.
                let length = input.int(in: 0...3) == 0 ? input.int(in: 0...2_000) : input.int(in: 0...200)
                let payload = (0..<length).map { _ in input.int(in: 0...3) == 0 ? 0 : input.byte() }
                nals.append(
                    Self.slice(
                        idr: idr, frameNumber: index % 16, firstMB: slice * 4, qpDelta: input.int(in: 0...20) - 10,
                        payload: payload))
            }
            var bytes: [UInt8] = []
            for nal in nals { bytes += [0, 0, 0, 1] + nal }
            let ranges = bytes.withUnsafeBytes { NALUnitSplitter.annexB($0) }
            units.append(AccessUnit(bytes: bytes, nalUnits: ranges, isIDR: idr))
        }
        return units
    }

    /// The AAC-LC stereo 48 kHz configuration of the frames.
    static let audioConfig = try? AudioSpecificConfig([0x11, 0x90])

    /// Up to 8 ADTS frames of random raw bytes.
    static func adtsFrames(_ input: inout FuzzBytes) -> [[UInt8]] {
        guard let audioConfig else { return [] }
        return (0..<input.int(in: 0...8)).compactMap { _ in
            let payload = input.bytes(input.int(in: 1...600))
            guard let header = try? audioConfig.adtsHeader(payloadLength: payload.count) else { return nil }
            return header + payload
        }
    }

    static let keyID = [UInt8](repeating: 0x4B, count: 16)

    // MARK: TS SAMPLE-AES

    static func transportStream(video: [AccessUnit], audio: [[UInt8]]) {
        guard let encryptor = try? SampleAESCipher(key: MediaFuzzing.key, iv: MediaFuzzing.iv, encrypt: true),
            let decryptor = try? SampleAESCipher(key: MediaFuzzing.key, iv: MediaFuzzing.iv, encrypt: false),
            let audioConfig,
            let setup = try? AudioSetupInformation(
                audioType: audioConfig.sampleAESAudioType, setupData: audioConfig.bytes
            )
            .serialized(),
            let registration = try? TransportStreamDescriptor.registration("apad", setup),
            var writer = try? TransportStreamWriter(
                tracks: [
                    TransportStreamTrack(
                        pid: 0x100, streamType: ElementaryCodec.h264.streamType(encrypted: true), streamID: 0xE0,
                        descriptors: TransportStreamDescriptor.privateDataIndicator(
                            ElementaryCodec.h264.privateDataIndicator)),
                    TransportStreamTrack(
                        pid: 0x101, streamType: ElementaryCodec.aac.streamType(encrypted: true), streamID: 0xC0,
                        descriptors: TransportStreamDescriptor.privateDataIndicator(
                            ElementaryCodec.aac.privateDataIndicator)
                            + registration),
                ], pcrPID: 0x100)
        else { preconditionFailure("the SAMPLE-AES setup was refused") }
        let buffer = ByteBuffer()
        writer.writeProgramTables(to: buffer)
        for (index, unit) in video.enumerated() {
            var bytes = unit.bytes
            var payload: [UInt8] = []
            do {
                try encryptor.encryptVideo(&bytes, nalUnits: unit.nalUnits, appendingTo: &payload)
                try payload.withBytes { raw throws(FormatError) in
                    try writer.writePES(
                        track: 0, payload: raw, pts: Int64(index) * 3_000 + 9_000, dts: Int64(index) * 3_000 + 6_000,
                        pcr: Int64(index) * 3_000 * 300, randomAccess: unit.isIDR, to: buffer)
                }
            } catch {
                preconditionFailure("video access unit \(index) was not packaged: \(error)")
            }
        }
        for (index, frame) in audio.enumerated() {
            var bytes = frame
            do {
                try bytes.withUnsafeMutableBytes { try encryptor.processAudio($0, codec: .aac) }
                try bytes.withBytes { raw throws(FormatError) in
                    try writer.writePES(
                        track: 1, payload: raw, pts: Int64(index) * 1_920, dts: nil, pcr: nil, randomAccess: true,
                        to: buffer)
                }
            } catch {
                preconditionFailure("audio frame \(index) was not packaged: \(error)")
            }
        }
        var reader = TransportStreamReader(name: "differential.ts")
        var packets: [PESPacket]
        do {
            packets = try reader.readAll(buffer.bytes)
        } catch {
            preconditionFailure("the packaged TS does not read back: \(error)")
        }
        packets += reader.finish()
        let videoPackets = packets.filter { $0.pid == 0x100 }
        let audioPackets = packets.filter { $0.pid == 0x101 }
        precondition(videoPackets.count == video.count && audioPackets.count == audio.count, "PES packets lost")
        for (unit, packet) in zip(video, videoPackets) {
            let nals: [[UInt8]]
            do {
                nals = try packet.payload.withBytes { raw throws(CryptoError) in try decryptor.decryptVideo(raw) }
            } catch {
                preconditionFailure("a packaged access unit does not decrypt: \(error)")
            }
            precondition(nals == unit.nalUnits.map { Array(unit.bytes[$0]) }, "SAMPLE-AES video does not round-trip")
        }
        for (frame, packet) in zip(audio, audioPackets) {
            var bytes = packet.payload
            do {
                try bytes.withUnsafeMutableBytes { try decryptor.processAudio($0, codec: .aac) }
            } catch {
                preconditionFailure("a packaged audio frame does not decrypt: \(error)")
            }
            precondition(bytes == frame, "SAMPLE-AES audio does not round-trip")
        }
    }

    // MARK: CMAF cbcs and cenc

    static func fragmented(video: [AccessUnit], audio: [[UInt8]], scheme: CENCScheme, fragmentLength: Int) {
        var builder = H264SampleBuilder()
        var clear: [[UInt8]] = []
        var records: [FragmentSample] = []
        var ivs = IVCounter(value: 0x0102_0304_0506_0708)
        for (index, unit) in video.enumerated() {
            do {
                let sample = try builder.sample(bytes: unit.bytes, nalUnits: unit.nalUnits)
                clear.append(sample.bytes)
                records.append(
                    FragmentSample(
                        size: sample.bytes.count, duration: 3_000, isSync: unit.isIDR,
                        iv: scheme == .cenc ? ivs.next() : [],
                        subsamples: SubsampleMap.make(sample.units, scheme: scheme)
                    ))
            } catch {
                preconditionFailure("access unit \(index) is refused by the sample builder: \(error)")
            }
        }
        guard let sps = builder.sequenceParameterSets.first, let parsed = try? H264SequenceParameterSet(nal: sps) else {
            preconditionFailure("the builder kept no SPS")
        }
        let avcC = FragmentedMP4Writer.avcConfiguration(
            sps: builder.sequenceParameterSets, pps: builder.pictureParameterSets, parsed: parsed)
        let encryption = videoEncryption(scheme)
        let videoTrack = FragmentedTrack(
            media: .h264(width: parsed.width, height: parsed.height, configuration: avcC), timescale: 90_000,
            encryption: encryption)
        roundTrip(videoTrack, clear: clear, records: records, fragmentLength: fragmentLength)

        guard let audioConfig, !audio.isEmpty else { return }
        var frames: [[UInt8]] = []
        var audioRecords: [FragmentSample] = []
        for frame in audio {
            guard let raw = try? AACSampleBuilder.samples(frame) else {
                preconditionFailure("an ADTS frame is refused")
            }
            for sample in raw {
                frames.append(sample)
                audioRecords.append(
                    FragmentSample(
                        size: sample.count, duration: 1_024, isSync: true, iv: scheme == .cenc ? ivs.next() : []))
            }
        }
        var audioEncryption = encryption
        (audioEncryption.cryptBlocks, audioEncryption.skipBlocks) = (0, 0)
        let audioTrack = FragmentedTrack(
            media: .aac(
                sampleRate: audioConfig.sampleRate, channels: audioConfig.channelConfiguration,
                configuration: audioConfig.bytes), timescale: 48_000, encryption: audioEncryption)
        roundTrip(audioTrack, clear: frames, records: audioRecords, fragmentLength: fragmentLength)
    }

    /// A video track's encryption as the packager writes it: `cbcs` 1:9 with the constant IV, or `cenc`.
    static func videoEncryption(_ scheme: CENCScheme) -> TrackEncryption {
        TrackEncryption(
            scheme: scheme, keyID: keyID, constantIV: scheme == .cbcs ? MediaFuzzing.iv : nil,
            cryptBlocks: scheme == .cbcs ? 1 : 0, skipBlocks: scheme == .cbcs ? 9 : 0)
    }

    /// 8-byte `cenc` IVs counted up from `value`, as the packager counts them.
    struct IVCounter {
        var value: UInt64

        mutating func next() -> [UInt8] {
            defer { value &+= 1 }
            return (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
        }
    }

    /// Encrypts `clear` as the packager does, writes the init segment and fragments of `fragmentLength`
    /// samples, and reads them back as `verify` does: every sample must decrypt to its clear bytes.
    static func roundTrip(_ track: FragmentedTrack, clear: [[UInt8]], records: [FragmentSample], fragmentLength: Int) {
        guard let encryption = track.encryption,
            let encryptor = try? CENCSampleCipher(scheme: encryption.scheme, key: MediaFuzzing.key, encrypt: true),
            let decryptor = try? CENCSampleCipher(scheme: encryption.scheme, key: MediaFuzzing.key, encrypt: false)
        else { preconditionFailure("the CENC setup was refused") }
        let initSegment = FragmentedMP4Writer.initSegment(track)
        let tenc: TrackEncryptionBox
        var headers: any NALClearLength = H264ClearLength()
        do {
            var top = BoxReader(initSegment, structure: "init")
            let moov = try BoxReader.one("moov", in: try top.boxes(), structure: "init")
            var entryPath = ["trak", "mdia", "minf", "stbl", "stsd", track.isVideo ? "encv" : "enca"]
            var box = moov
            for type in entryPath {
                var reader = BoxReader(initSegment, range: box.body, structure: "init")
                try reader.skip(CMAFVerifyFuzzing.headers[box.type] ?? 0)
                box = try BoxReader.one(type, in: try reader.boxes(), structure: "init " + box.type)
            }
            let entry = box
            entryPath = ["sinf", "schi", "tenc"]
            for type in entryPath {
                var reader = BoxReader(initSegment, range: box.body, structure: "init")
                try reader.skip(CMAFVerifyFuzzing.headers[box.type] ?? 0)
                box = try BoxReader.one(type, in: try reader.boxes(), structure: "init " + box.type)
            }
            tenc = try TrackEncryptionBox(initSegment, box: box, structure: "init")
            if track.isVideo {
                var reader = BoxReader(initSegment, range: entry.body, structure: "init")
                try reader.skip(78)
                let children = try reader.boxes()
                if let hvcC = children.first(where: { $0.type == "hvcC" }) {
                    guard case .hevc(_, _, let written) = track.media else { preconditionFailure("hvcC for H.264") }
                    precondition(Array(initSegment[hvcC.body]) == written, "hvcC is not the builder's")
                    let record = try HEVCDecoderConfiguration(parsing: Array(initSegment[hvcC.body]))
                    var state = HEVCClearLength()
                    for set in record.nalUnits { _ = try state.clearBytes(of: set, structure: "init hvcC") }
                    headers = state
                } else {
                    let avcC = try BoxReader.one("avcC", in: children, structure: "init encv")
                    let record = try AVCConfiguration(extradata: Array(initSegment[avcC.body]))
                    var state = H264ClearLength()
                    for set in record.sequenceParameterSets + record.pictureParameterSets {
                        _ = try state.clearBytes(of: set, structure: "init avcC")
                    }
                    headers = state
                }
            }
        } catch {
            preconditionFailure("the init segment does not read back: \(error)")
        }
        precondition(tenc.keyID == encryption.keyID && tenc.isProtected == 1, "tenc")
        precondition((tenc.cryptBlocks, tenc.skipBlocks) == (encryption.cryptBlocks, encryption.skipBlocks), "pattern")
        precondition(tenc.perSampleIVSize == encryption.scheme.perSampleIVSize, "IV size")
        precondition(tenc.constantIV == (encryption.constantIV ?? []), "constant IV")

        var sequence: UInt32 = 1
        var decodeTime: UInt64 = 0
        for first in stride(from: 0, to: clear.count, by: fragmentLength) {
            let range = first..<min(first + fragmentLength, clear.count)
            var segment = FragmentedMP4Writer.fragmentHeader(
                track, sequenceNumber: sequence, baseDecodeTime: decodeTime, samples: Array(records[range]))
            for index in range {
                var sample = clear[index]
                do {
                    try encryptor.process(
                        &sample, subsamples: records[index].subsamples,
                        iv: records[index].iv.isEmpty ? MediaFuzzing.iv : records[index].iv)
                } catch {
                    preconditionFailure("sample \(index) was not encrypted: \(error)")
                }
                segment += sample
            }
            let read: [[UInt8]]
            do {
                read = try readFragment(
                    segment, tenc: tenc, decryptor: decryptor, isVideo: track.isVideo, headers: &headers)
            } catch {
                preconditionFailure("fragment \(sequence) does not read back: \(error)")
            }
            precondition(read == Array(clear[range]), "\(encryption.scheme) fragment \(sequence) does not round-trip")
            sequence += 1
            decodeTime += records[range].reduce(0) { $0 + UInt64($1.duration) }
        }
    }

    /// One fragment read as `verify` reads it: boxes, trun against the mdat, senc against trun, saiz and
    /// saio against senc, the clear ranges recomputed from the slice headers against senc's maps, then
    /// each sample decrypted.
    static func readFragment(
        _ bytes: [UInt8], tenc: TrackEncryptionBox, decryptor: CENCSampleCipher, isVideo: Bool,
        headers: inout any NALClearLength
    ) throws -> [[UInt8]] {
        var top = BoxReader(bytes, structure: "fragment")
        let boxes = try top.boxes()
        precondition(boxes.map(\.type) == ["moof", "mdat"])
        let (moof, mdat) = (boxes[0], boxes[1])
        var moofReader = BoxReader(bytes, box: moof, structure: "fragment")
        let traf = try BoxReader.one("traf", in: try moofReader.boxes(), structure: "moof")
        var trafReader = BoxReader(bytes, box: traf, structure: "moof")
        let children = try trafReader.boxes()
        let structure = "fragment moof/traf"
        let run = try TrackRunBox(
            bytes, box: try BoxReader.one("trun", in: children, structure: structure), structure: structure,
            defaultDuration: 0, defaultSize: 0)
        precondition(run.dataOffset == mdat.body.lowerBound - moof.range.lowerBound, "trun data offset")
        precondition(run.sizes.reduce(0, +) == mdat.body.count, "trun sizes against the mdat")
        let senc = try SampleEncryptionBox(
            bytes, box: try BoxReader.one("senc", in: children, structure: structure), structure: structure,
            ivSize: tenc.perSampleIVSize, sampleSizes: run.sizes)
        let saiz = try SampleAuxiliaryInformationSizes(
            bytes, box: try BoxReader.one("saiz", in: children, structure: structure), structure: structure,
            sampleCount: run.sizes.count)
        precondition(saiz.sizes == senc.recordSizes, "saiz against senc")
        let saio = try SampleAuxiliaryInformationOffsets(
            bytes, box: try BoxReader.one("saio", in: children, structure: structure), structure: structure)
        precondition(saio.offsets == [senc.firstRecord - moof.range.lowerBound], "saio against senc")
        var samples: [[UInt8]] = []
        var start = mdat.body.lowerBound
        for (index, size) in run.sizes.enumerated() {
            var sample = Array(bytes[start..<(start + size)])
            start += size
            let record = senc.records[index]
            if isVideo {
                var units: [(size: Int, clear: Int)] = []
                var offset = 0
                while offset < sample.count {
                    let length = Int(sample.bigEndianUInt32(at: offset))
                    precondition(length > 0 && length <= sample.count - offset - 4, "NAL length")
                    let nal = (offset + 4)..<(offset + 4 + length)
                    // In place, as verify reads it (HEVC parses a slice from a copy of its first bytes).
                    let clearBytes = try sample.withBytes { raw throws(FormatError) in
                        try headers.clearBytes(
                            of: UnsafeRawBufferPointer(rebasing: raw[nal]), structure: "fragment NAL unit")
                    }
                    units.append((4 + length, 4 + clearBytes))
                    offset = nal.upperBound
                }
                precondition(SubsampleMap.make(units, scheme: decryptor.scheme) == record.subsamples, "senc map")
            } else {
                precondition(record.subsamples.isEmpty, "audio with subsamples")
            }
            try decryptor.process(
                &sample, subsamples: record.subsamples, iv: tenc.perSampleIVSize == 0 ? tenc.constantIV : record.iv,
                crypt: tenc.cryptBlocks, skip: tenc.skipBlocks)
            samples.append(sample)
        }
        return samples
    }
}
