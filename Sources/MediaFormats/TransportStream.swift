/// The elementary stream formats the packager writes to MPEG-2 TS, with their PMT signalling in the
/// clear and under SAMPLE-AES (Apple's "MPEG-2 Stream Encryption Format for HLS", §3).
public enum ElementaryCodec: String, Sendable, Hashable {
    case h264
    /// HEVC, which GuardPlay writes to fMP4 only (SAMPLE-AES defines no HEVC in MPEG-TS).
    case hevc
    case aac
    case ac3
    case eac3

    /// The PMT stream_type: clear (0x1B, 0x0F, 0x81, 0x87) or SAMPLE-AES (0xDB, 0xCF, 0xC1, 0xC2).
    public func streamType(encrypted: Bool) -> UInt8 {
        switch self {
        case .h264: encrypted ? 0xDB : 0x1B
        case .hevc: 0x24  // no SAMPLE-AES variant exists; the packager never writes HEVC to TS
        case .aac: encrypted ? 0xCF : 0x0F
        case .ac3: encrypted ? 0xC1 : 0x81
        case .eac3: encrypted ? 0xC2 : 0x87
        }
    }

    /// The codec a PMT stream_type names, and whether it is the SAMPLE-AES variant; nil for others.
    public static func from(streamType: UInt8) -> (codec: ElementaryCodec, encrypted: Bool)? {
        for codec in [ElementaryCodec.h264, .aac, .ac3, .eac3] {
            if codec.streamType(encrypted: false) == streamType { return (codec, false) }
            if codec.streamType(encrypted: true) == streamType { return (codec, true) }
        }
        return nil
    }

    /// The private_data_indicator a SAMPLE-AES stream carries: `zavc`, `aacd`, `ac3d` or `ec3d`.
    public var privateDataIndicator: String {
        switch self {
        case .h264: "zavc"
        case .hevc: ""  // none: HEVC is never SAMPLE-AES in TS
        case .aac: "aacd"
        case .ac3: "ac3d"
        case .eac3: "ec3d"
        }
    }

    /// The PES stream_id base: 0xE0 video, 0xC0 MPEG audio, 0xBD (private_stream_1) for AC-3/E-AC-3.
    public var pesStreamID: UInt8 {
        switch self {
        case .h264, .hevc: 0xE0
        case .aac: 0xC0
        case .ac3, .eac3: 0xBD
        }
    }

    /// True for audio.
    public var isAudio: Bool { self != .h264 && self != .hevc }

    /// True for AC-3 and E-AC-3.
    public var isDolby: Bool { self == .ac3 || self == .eac3 }
}

/// The audio setup information of SAMPLE-AES: the 'apad' registration descriptor's payload in the PMT
/// and the data of the ID3 `com.apple.streaming.audioDescription` frame in packed audio.
public struct AudioSetupInformation: Equatable, Sendable {
    /// `zaac`, `zach`, `zacp`, `zac3` or `zec3`.
    public var audioType: String
    /// AudioSpecificConfig for AAC, the first 10 bytes of a syncframe for AC-3, `dec3` for E-AC-3.
    public var setupData: [UInt8]

    /// The serialized form: audio_type, priming (0), version (1), setup_data_length, setup_data; throws
    /// when the setup data is longer than its one length byte can say.
    public func serialized() throws(FormatError) -> [UInt8] {
        guard let length = UInt8(exactly: setupData.count) else {
            throw FormatError(
                "audio setup information", "\(setupData.count) bytes of setup data exceed setup_data_length's 255")
        }
        var out: [UInt8] = []
        out.appendFourCC(audioType)
        out.appendBigEndian(UInt16(0))
        out.append(1)
        out.append(length)
        out.append(contentsOf: setupData)
        return out
    }

    /// Parses the serialized form.
    public init(bytes: [UInt8]) throws(FormatError) {
        guard bytes.count >= 8 else { throw FormatError("audio setup information", "only \(bytes.count) bytes") }
        audioType = String(decoding: bytes[0..<4], as: UTF8.self)
        let length = Int(bytes[7])
        guard bytes.count == 8 + length else {
            throw FormatError(
                "audio setup information", "setup_data_length \(length) but \(bytes.count - 8) bytes follow")
        }
        setupData = Array(bytes[8...])
    }

    /// Creates setup information.
    public init(audioType: String, setupData: [UInt8]) {
        self.audioType = audioType
        self.setupData = setupData
    }
}

/// MPEG-2 descriptors the PMT carries.
public enum TransportStreamDescriptor: Sendable {
    /// private_data_indicator_descriptor (tag 0x0F) with a four-character code.
    public static func privateDataIndicator(_ code: String) -> [UInt8] {
        var out: [UInt8] = [0x0F, 4]
        out.appendFourCC(code)
        return out
    }

    /// registration_descriptor (tag 0x05): `format` and its additional identification bytes; throws
    /// when they are longer than the descriptor's one length byte can say.
    public static func registration(_ format: String, _ additional: [UInt8]) throws(FormatError) -> [UInt8] {
        guard let length = UInt8(exactly: 4 + additional.count) else {
            throw FormatError(
                "registration descriptor", "\(additional.count) bytes of additional identification exceed 251")
        }
        var out: [UInt8] = [0x05, length]
        out.appendFourCC(format)
        out.append(contentsOf: additional)
        return out
    }

    /// ISO_639_language_descriptor (tag 0x0A) for a three-letter code.
    public static func language(_ code: String) -> [UInt8] {
        var out: [UInt8] = [0x0A, 4]
        out.append(contentsOf: code.utf8.prefix(3))
        out.append(0)  // audio_type: undefined
        return out
    }
}

/// One elementary stream of the program a `TransportStreamWriter` writes.
public struct TransportStreamTrack: Sendable {
    /// The packet identifier.
    public var pid: UInt16
    /// The PMT stream_type.
    public var streamType: UInt8
    /// The PES stream_id.
    public var streamID: UInt8
    /// The ES_info descriptors, serialized.
    public var descriptors: [UInt8]

    /// Creates the value from its parts.
    public init(pid: UInt16, streamType: UInt8, streamID: UInt8, descriptors: [UInt8]) {
        self.pid = pid
        self.streamType = streamType
        self.streamID = streamID
        self.descriptors = descriptors
    }
}

/// MPEG-2 CRC-32 (polynomial 0x04C11DB7, not reflected, initial value all ones) of PSI sections.
public enum MPEGCRC32: Sendable {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index) << 24
        for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        return crc
    }

    /// The CRC of `bytes`.
    public static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = (crc << 8) ^ table[Int((crc >> 24) ^ UInt32(byte))] }
        return crc
    }
}

/// Writes one MPEG-2 transport stream program: PAT, PMT (the whole PMT in one packet), PES packets with
/// PTS/DTS, PCR on the PCR stream, and continuity counters that run on across segments.
public struct TransportStreamWriter: Sendable {
    /// Bytes in a TS packet.
    public static let packetSize = 188
    /// The PID of the PMT.
    public static let programMapPID: UInt16 = 0x1000
    /// The program number of the one program.
    public static let programNumber: UInt16 = 1
    /// The 33-bit wrap of PTS, DTS and PCR base values.
    public static let timestampWrap: Int64 = 1 << 33
    /// The largest PES packet written, header included (64 MiB, far above any H.264 access unit an
    /// encoder makes); the verifier refuses to assemble larger ones, so a hostile segment cannot make it
    /// hold one growing buffer per PID.
    public static let maximumPESSize = 64 << 20

    private let tracks: [TransportStreamTrack]
    private let pcrPID: UInt16
    private let programAssociation: [UInt8]
    private let programMap: [UInt8]
    /// The next continuity counter of every PID (13 bits), indexed by PID.
    private var continuity = [UInt8](repeating: 0, count: 8192)

    /// A writer for `tracks`, with the PCR on `pcrPID`; throws when the PMT would not fit one packet.
    public init(tracks: [TransportStreamTrack], pcrPID: UInt16) throws(FormatError) {
        self.tracks = tracks
        self.pcrPID = pcrPID
        programAssociation = try TransportStreamWriter.section(
            tableID: 0x00, idExtension: 1,
            body: {
                var body: [UInt8] = []
                body.appendBigEndian(TransportStreamWriter.programNumber)
                body.appendBigEndian(0xE000 | TransportStreamWriter.programMapPID)
                return body
            }())
        var body: [UInt8] = []
        body.appendBigEndian(0xE000 | pcrPID)
        body.appendBigEndian(UInt16(0xF000))  // no program descriptors
        for track in tracks {
            // ES_info_length has 12 bits, of which the first two must be zero.
            guard track.descriptors.count <= 0x3FF else {
                throw FormatError("PMT", "\(track.descriptors.count) bytes of descriptors exceed ES_info_length's 1023")
            }
            body.append(track.streamType)
            body.appendBigEndian(0xE000 | track.pid)
            body.appendBigEndian(0xF000 | UInt16(track.descriptors.count))
            body.append(contentsOf: track.descriptors)
        }
        programMap = try TransportStreamWriter.section(
            tableID: 0x02, idExtension: TransportStreamWriter.programNumber, body: body)
        guard programMap.count <= TransportStreamWriter.packetSize - 5 else {
            throw FormatError("PMT", "\(programMap.count) bytes do not fit one TS packet (183 at most)")
        }
    }

    /// A long-form PSI section with version 0, current, section 0 of 0, and its CRC; throws when the
    /// body is longer than a section_length (at most 1021) can say.
    private static func section(tableID: UInt8, idExtension: UInt16, body: [UInt8]) throws(FormatError) -> [UInt8] {
        guard 5 + body.count + 4 <= 1021 else {
            throw FormatError("PSI section", "\(body.count) bytes of table data exceed section_length's 1021")
        }
        var section: [UInt8] = [tableID]
        section.appendBigEndian(0xB000 | UInt16(5 + body.count + 4))
        section.appendBigEndian(idExtension)
        section.append(0xC1)  // reserved, version 0, current_next_indicator
        section.append(0)
        section.append(0)
        section.append(contentsOf: body)
        section.appendBigEndian(MPEGCRC32.checksum(section))
        return section
    }

    private mutating func nextContinuity(_ pid: UInt16) -> UInt8 {
        let value = continuity[Int(pid)]
        continuity[Int(pid)] = (value + 1) & 0x0F
        return value
    }

    /// Writes a PAT and a PMT packet.
    public mutating func writeProgramTables(to buffer: ByteBuffer) {
        writeSection(programAssociation, pid: 0, to: buffer)
        writeSection(programMap, pid: TransportStreamWriter.programMapPID, to: buffer)
    }

    private mutating func writeSection(_ section: [UInt8], pid: UInt16, to buffer: ByteBuffer) {
        let packet = buffer.extend(by: TransportStreamWriter.packetSize).assumingMemoryBound(to: UInt8.self)
        packet[0] = 0x47
        packet[1] = 0x40 | UInt8(pid >> 8)
        packet[2] = UInt8(pid & 0xFF)
        packet[3] = 0x10 | nextContinuity(pid)
        packet[4] = 0  // pointer_field
        section.withUnsafeBufferPointer { source in
            (packet + 5).update(from: source.baseAddress!, count: section.count)
        }
        (packet + 5 + section.count).update(
            repeating: 0xFF, count: TransportStreamWriter.packetSize - 5 - section.count)
    }

    /// Writes one PES packet carrying `payload` on track `index`, split into TS packets.
    ///
    /// `pts` and `dts` are 90 kHz; a `pcr` (27 MHz) is written in the first packet's adaptation field;
    /// `randomAccess` sets the random_access_indicator there.
    public mutating func writePES(
        track index: Int, payload: UnsafeRawBufferPointer, pts: Int64, dts: Int64?, pcr: Int64?,
        randomAccess: Bool, to buffer: ByteBuffer
    ) throws(FormatError) {
        let track = tracks[index]
        var header: [UInt8] = [0, 0, 1, track.streamID]
        let hasDTS = dts != nil && dts != pts
        let headerDataLength = hasDTS ? 10 : 5
        let pesLength = 3 + headerDataLength + payload.count
        guard 6 + pesLength <= TransportStreamWriter.maximumPESSize else {
            throw FormatError(
                "PES packet",
                "an access unit of \(payload.count) bytes exceeds the \(TransportStreamWriter.maximumPESSize) a PES "
                    + "packet may carry")
        }
        if pesLength > 0xFFFF {
            guard track.streamID & 0xF0 == 0xE0 else {
                throw FormatError("PES packet", "\(payload.count) bytes of audio exceed a PES packet's 65535")
            }
            header.appendBigEndian(UInt16(0))  // unbounded, allowed for video only
        } else {
            header.appendBigEndian(UInt16(pesLength))
        }
        header.append(0x84)  // '10', not scrambled, data_alignment_indicator
        header.append(hasDTS ? 0xC0 : 0x80)
        header.append(UInt8(headerDataLength))
        TransportStreamWriter.appendTimestamp(pts, marker: hasDTS ? 0x3 : 0x2, to: &header)
        if hasDTS, let dts { TransportStreamWriter.appendTimestamp(dts, marker: 0x1, to: &header) }

        var offset = 0  // into header ‖ payload
        let total = header.count + payload.count
        var first = true
        while offset < total {
            let packet = buffer.extend(by: TransportStreamWriter.packetSize).assumingMemoryBound(to: UInt8.self)
            packet[0] = 0x47
            packet[1] = (first ? 0x40 : 0) | UInt8(track.pid >> 8)
            packet[2] = UInt8(track.pid & 0xFF)
            var adaptation: [UInt8] = []
            if first && (pcr != nil || randomAccess) {
                var flags: UInt8 = randomAccess ? 0x40 : 0
                if pcr != nil { flags |= 0x10 }
                adaptation.append(flags)
                if let pcr { TransportStreamWriter.appendPCR(pcr, to: &adaptation) }
            }
            let remaining = total - offset
            var useAdaptation = !adaptation.isEmpty
            var room = 184 - (useAdaptation ? 1 + adaptation.count : 0)
            if remaining < room {
                // Stuff the adaptation field so the payload ends the packet: its length byte, then
                // 183 - remaining bytes (flags, PCR if any, 0xFF stuffing).
                let fieldLength = 183 - remaining
                if fieldLength > 0 && adaptation.isEmpty { adaptation.append(0) }
                adaptation.append(contentsOf: repeatElement(0xFF, count: fieldLength - adaptation.count))
                useAdaptation = true
                room = remaining
            }
            var cursor = 4
            if useAdaptation {
                packet[3] = 0x30 | nextContinuity(track.pid)
                packet[4] = UInt8(adaptation.count)
                for (position, byte) in adaptation.enumerated() { packet[5 + position] = byte }
                cursor = 5 + adaptation.count
            } else {
                packet[3] = 0x10 | nextContinuity(track.pid)
            }
            // Copy `room` bytes of header ‖ payload.
            var copied = 0
            while copied < room {
                if offset < header.count {
                    packet[cursor] = header[offset]
                    cursor += 1
                    offset += 1
                    copied += 1
                } else {
                    let count = room - copied
                    (packet + cursor).update(
                        from: payload.baseAddress!.assumingMemoryBound(to: UInt8.self) + (offset - header.count),
                        count: count)
                    cursor += count
                    offset += count
                    copied += count
                }
            }
            first = false
        }
    }

    /// Appends a 5-byte PES timestamp: a 4-bit prefix, then 33 bits with marker bits.
    public static func appendTimestamp(_ value: Int64, marker: UInt8, to bytes: inout [UInt8]) {
        let time = UInt64(((value % timestampWrap) + timestampWrap) % timestampWrap)
        bytes.append(marker << 4 | UInt8((time >> 29) & 0x0E) | 1)
        bytes.append(UInt8((time >> 22) & 0xFF))
        bytes.append(UInt8((time >> 14) & 0xFE) | 1)
        bytes.append(UInt8((time >> 7) & 0xFF))
        bytes.append(UInt8((time << 1) & 0xFE) | 1)
    }

    /// Appends a 6-byte PCR: 33-bit base (90 kHz), 6 reserved bits, 9-bit extension.
    public static func appendPCR(_ value: Int64, to bytes: inout [UInt8]) {
        let wrap = timestampWrap * 300
        let pcr = UInt64(((value % wrap) + wrap) % wrap)
        let base = pcr / 300
        let ext = pcr % 300
        bytes.append(UInt8((base >> 25) & 0xFF))
        bytes.append(UInt8((base >> 17) & 0xFF))
        bytes.append(UInt8((base >> 9) & 0xFF))
        bytes.append(UInt8((base >> 1) & 0xFF))
        bytes.append(UInt8((base & 1) << 7) | 0x7E | UInt8((ext >> 8) & 1))
        bytes.append(UInt8(ext & 0xFF))
    }
}
