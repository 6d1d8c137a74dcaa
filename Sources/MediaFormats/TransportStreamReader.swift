/// One elementary stream as a PMT lists it.
public struct ProgramMapEntry: Equatable, Sendable {
    /// The packet identifier.
    public var pid: UInt16
    /// The stream_type.
    public var streamType: UInt8
    /// The ES_info descriptors, serialized.
    public var descriptors: [UInt8]

    /// The descriptors as (tag, body) pairs; malformed trailing bytes are reported as nil.
    public var parsedDescriptors: [(tag: UInt8, body: [UInt8])]? {
        var result: [(tag: UInt8, body: [UInt8])] = []
        var offset = 0
        while offset < descriptors.count {
            guard offset + 2 <= descriptors.count else { return nil }
            let length = Int(descriptors[offset + 1])
            guard offset + 2 + length <= descriptors.count else { return nil }
            result.append((descriptors[offset], Array(descriptors[(offset + 2)..<(offset + 2 + length)])))
            offset += 2 + length
        }
        return result
    }
}

/// The program map of a transport stream.
public struct ProgramMap: Equatable, Sendable {
    /// The PID that carries the PCR.
    public var pcrPID: UInt16
    /// The elementary streams, in PMT order.
    public var streams: [ProgramMapEntry]
}

/// A PES packet reassembled from TS packets.
public struct PESPacket: Sendable {
    /// The PID it came on.
    public var pid: UInt16
    /// The PES stream_id.
    public var streamID: UInt8
    /// Presentation timestamp (90 kHz), if present.
    public var pts: Int64?
    /// Decoding timestamp (90 kHz), if present.
    public var dts: Int64?
    /// The PES payload: the access unit(s).
    public var payload: [UInt8]
    /// Byte offset of the TS packet where the PES starts.
    public var startOffset: Int
    /// Byte offset just after its last TS packet.
    public var endOffset: Int
    /// The random_access_indicator of its first TS packet.
    public var randomAccess: Bool
    /// The PCR (27 MHz) in its first TS packet, if any.
    public var pcr: Int64?
}

/// Reads MPEG-2 transport stream bytes back: checks sync bytes, continuity counters and PSI CRCs,
/// parses PAT and PMT, and reassembles PES packets. Soft violations become `issues`; bytes that are not
/// TS at all throw.
///
/// Continuity counters are tracked across `read` calls, so feeding consecutive segments of one
/// playlist checks continuity across segment boundaries too.
public struct TransportStreamReader: Sendable {
    private var continuity: [UInt16: UInt8] = [:]
    private var pending: [UInt16: (header: PESPacket, bytes: [UInt8])] = [:]
    /// PIDs whose current PES outgrew `TransportStreamWriter.maximumPESSize`: dropped with an issue,
    /// their packets skipped until the next PES starts.
    private var oversized: Set<UInt16> = []
    /// The PMT PID the PAT announced.
    public private(set) var programMapPID: UInt16?
    /// The last PMT read.
    public private(set) var programMap: ProgramMap?
    /// How many PAT and PMT sections were read.
    public private(set) var tableCount = (programAssociation: 0, programMap: 0)
    /// Violations found so far, in words.
    public private(set) var issues: [String] = []
    private let name: String
    private let maximumPESSize: Int

    /// A reader naming `name` (such as a segment file) in its messages, which assembles PES packets
    /// of at most `maximumPESSize` bytes.
    public init(name: String, maximumPESSize: Int = TransportStreamWriter.maximumPESSize) {
        self.name = name
        self.maximumPESSize = maximumPESSize
    }

    /// Reads whole TS packets; `baseOffset` is the position of `bytes` in its file, for PES offsets.
    /// Returns the PES packets that were completed.
    public mutating func read(_ bytes: UnsafeRawBufferPointer, baseOffset: Int = 0) throws(FormatError) -> [PESPacket] {
        let size = TransportStreamWriter.packetSize
        guard bytes.count % size == 0 else {
            throw FormatError(name, "\(bytes.count) bytes is not a whole number of 188-byte TS packets")
        }
        var completed: [PESPacket] = []
        var offset = 0
        while offset < bytes.count {
            let packet = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)])
            try readPacket(packet, at: baseOffset + offset, completed: &completed)
            offset += size
        }
        return completed
    }

    /// Reads `bytes` (whole TS packets) and returns every PES packet in them, the last ones included:
    /// for a segment or byte range that ends on a PES boundary.
    public mutating func readAll(_ bytes: [UInt8]) throws(FormatError) -> [PESPacket] {
        let packets = try bytes.withBytes { raw throws(FormatError) in try read(raw) }
        return packets + finish()
    }

    /// Returns the PES packets still being assembled, as complete; call at the end of the stream.
    public mutating func finish() -> [PESPacket] {
        var completed: [PESPacket] = []
        for pid in pending.keys.sorted() {
            if let packet = pending.removeValue(forKey: pid).flatMap({ complete($0) }) { completed.append(packet) }
        }
        return completed
    }

    private mutating func readPacket(
        _ packet: UnsafeRawBufferPointer, at position: Int, completed: inout [PESPacket]
    ) throws(FormatError) {
        guard packet[0] == 0x47 else {
            throw FormatError(name, "byte \(position) is 0x\([packet[0]].hexString), not the 0x47 sync byte")
        }
        if packet[1] & 0x80 != 0 { issues.append("\(name): packet at byte \(position) has transport_error_indicator") }
        let unitStart = packet[1] & 0x40 != 0
        let pid = UInt16(packet[1] & 0x1F) << 8 | UInt16(packet[2])
        let scrambling = packet[3] >> 6
        let control = (packet[3] >> 4) & 0x03
        let counter = packet[3] & 0x0F
        if scrambling != 0 { issues.append("\(name): packet at byte \(position) is TS-scrambled") }
        guard control != 0 else {
            issues.append("\(name): packet at byte \(position) has reserved adaptation_field_control 0")
            return
        }
        if control & 0x01 != 0 {
            if let last = continuity[pid], counter != (last + 1) & 0x0F {
                issues.append(
                    "\(name): continuity counter of PID 0x\(String(pid, radix: 16)) jumps from \(last) to \(counter) at byte \(position)"
                )
            }
            continuity[pid] = counter
        }
        var payloadStart = 4
        var randomAccess = false
        var pcr: Int64? = nil
        if control & 0x02 != 0 {
            let length = Int(packet[4])
            guard 5 + length <= 188, control & 0x01 == 0 || 5 + length < 188 || length == 183 else {
                throw FormatError(name, "adaptation field of \(length) bytes overruns the packet at byte \(position)")
            }
            if length > 0 {
                let flags = packet[5]
                randomAccess = flags & 0x40 != 0
                if flags & 0x10 != 0 {
                    guard length >= 7 else { throw FormatError(name, "PCR flag set in a short adaptation field") }
                    var base: Int64 = 0
                    for index in 6..<10 { base = base << 8 | Int64(packet[index]) }
                    base = base << 1 | Int64(packet[10] >> 7)
                    let ext = Int64(packet[10] & 1) << 8 | Int64(packet[11])
                    pcr = base * 300 + ext
                }
            }
            payloadStart = 5 + length
        }
        guard control & 0x01 != 0, payloadStart < 188 else { return }
        let payload = UnsafeRawBufferPointer(rebasing: packet[payloadStart...])
        if pid == 0 {
            try readProgramAssociation(payload, unitStart: unitStart, at: position)
        } else if pid == programMapPID {
            try readProgramMap(payload, unitStart: unitStart, at: position)
        } else if let map = programMap, map.streams.contains(where: { $0.pid == pid }) {
            if unitStart {
                if let previous = pending.removeValue(forKey: pid), let packet = complete(previous) {
                    completed.append(packet)
                }
                oversized.remove(pid)
                let header = PESPacket(
                    pid: pid, streamID: 0, pts: nil, dts: nil, payload: [], startOffset: position,
                    endOffset: position + 188, randomAccess: randomAccess, pcr: pcr)
                pending[pid] = (header, Array(payload))
            } else if let assembled = pending[pid]?.bytes.count {
                guard assembled + payload.count <= maximumPESSize else {
                    let start = pending.removeValue(forKey: pid)!.header.startOffset
                    oversized.insert(pid)
                    issues.append(
                        "\(name): the PES on PID 0x\(String(pid, radix: 16)) at byte \(start) grows past "
                            + "\(maximumPESSize) bytes, the largest GuardPlay writes; it is not checked")
                    return
                }
                pending[pid]!.bytes.appendBytes(payload)
                pending[pid]!.header.endOffset = position + 188
            } else if oversized.contains(pid) {
                return
            } else {
                issues.append("\(name): PID 0x\(String(pid, radix: 16)) continues a PES that never started")
            }
        }
    }

    private mutating func section(
        _ payload: UnsafeRawBufferPointer, unitStart: Bool, table: String, at position: Int
    ) throws(FormatError) -> [UInt8]? {
        guard unitStart else {
            issues.append("\(name): \(table) at byte \(position) continues a section across packets")
            return nil
        }
        let pointer = Int(payload[0])
        guard 1 + pointer + 3 <= payload.count else { throw FormatError(name, "\(table) pointer_field overruns") }
        let start = 1 + pointer
        let length = Int(payload[start + 1] & 0x0F) << 8 | Int(payload[start + 2])
        guard start + 3 + length <= payload.count else {
            issues.append("\(name): \(table) at byte \(position) does not fit in one TS packet")
            return nil
        }
        let bytes = Array(payload[start..<(start + 3 + length)])
        guard bytes.count >= 12, MPEGCRC32.checksum(bytes) == 0 else {
            issues.append("\(name): \(table) at byte \(position) has a bad CRC or is too short")
            return nil
        }
        return bytes
    }

    private mutating func readProgramAssociation(
        _ payload: UnsafeRawBufferPointer, unitStart: Bool, at position: Int
    ) throws(FormatError) {
        guard let bytes = try section(payload, unitStart: unitStart, table: "PAT", at: position) else { return }
        guard bytes[0] == 0x00 else {
            throw FormatError(name, "PID 0 carries table 0x\([bytes[0]].hexString), not a PAT")
        }
        tableCount.programAssociation += 1
        var offset = 8
        var programs: [UInt16] = []
        while offset + 4 <= bytes.count - 4 {
            let number = bytes.bigEndianUInt16(at: offset)
            let pid = bytes.bigEndianUInt16(at: offset + 2) & 0x1FFF
            if number != 0 {
                programs.append(pid)
            }
            offset += 4
        }
        guard programs.count == 1 else {
            issues.append("\(name): PAT lists \(programs.count) programs, one expected")
            programMapPID = programs.first
            return
        }
        programMapPID = programs[0]
    }

    private mutating func readProgramMap(
        _ payload: UnsafeRawBufferPointer, unitStart: Bool, at position: Int
    ) throws(FormatError) {
        guard let bytes = try section(payload, unitStart: unitStart, table: "PMT", at: position) else { return }
        guard bytes[0] == 0x02 else { throw FormatError(name, "PMT PID carries table 0x\([bytes[0]].hexString)") }
        tableCount.programMap += 1
        let pcrPID = bytes.bigEndianUInt16(at: 8) & 0x1FFF
        let infoLength = Int(bytes.bigEndianUInt16(at: 10) & 0x0FFF)
        var offset = 12 + infoLength
        var streams: [ProgramMapEntry] = []
        while offset + 5 <= bytes.count - 4 {
            let type = bytes[offset]
            let pid = bytes.bigEndianUInt16(at: offset + 1) & 0x1FFF
            let length = Int(bytes.bigEndianUInt16(at: offset + 3) & 0x0FFF)
            guard offset + 5 + length <= bytes.count - 4 else {
                throw FormatError(name, "PMT entry for PID 0x\(String(pid, radix: 16)) overruns the section")
            }
            streams.append(
                ProgramMapEntry(
                    pid: pid, streamType: type, descriptors: Array(bytes[(offset + 5)..<(offset + 5 + length)])))
            offset += 5 + length
        }
        let map = ProgramMap(pcrPID: pcrPID, streams: streams)
        if let previous = programMap, previous != map {
            issues.append("\(name): PMT at byte \(position) differs from the previous one")
        }
        programMap = map
    }

    /// Parses the PES header of an assembled packet.
    private mutating func complete(_ assembled: (header: PESPacket, bytes: [UInt8])) -> PESPacket? {
        var packet = assembled.header
        let bytes = assembled.bytes
        let origin = "\(name): PES on PID 0x\(String(packet.pid, radix: 16)) at byte \(packet.startOffset)"
        guard bytes.count >= 9, bytes[0] == 0, bytes[1] == 0, bytes[2] == 1 else {
            issues.append("\(origin) has no PES start code")
            return nil
        }
        packet.streamID = bytes[3]
        let declared = Int(bytes.bigEndianUInt16(at: 4))
        let flags = bytes[7]
        let headerLength = Int(bytes[8])
        guard 9 + headerLength <= bytes.count else {
            issues.append("\(origin) has a header longer than the packet")
            return nil
        }
        if declared != 0 && declared != bytes.count - 6 {
            issues.append("\(origin) declares \(declared) bytes but carries \(bytes.count - 6)")
        }
        func timestamp(at offset: Int) -> Int64? {
            guard offset + 5 <= 9 + headerLength else { return nil }
            var value = Int64((bytes[offset] >> 1) & 0x07) << 30
            value |= Int64(bytes[offset + 1]) << 22 | Int64(bytes[offset + 2] >> 1) << 15
            value |= Int64(bytes[offset + 3]) << 7 | Int64(bytes[offset + 4] >> 1)
            return value
        }
        if flags & 0x80 != 0 { packet.pts = timestamp(at: 9) }
        if flags & 0xC0 == 0xC0 { packet.dts = timestamp(at: 14) }
        packet.payload = Array(bytes[(9 + headerLength)...])
        return packet
    }
}
