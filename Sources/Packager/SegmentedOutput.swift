import MediaFormats

/// The segments of one media playlist as they are written: a TS program (or packed audio) cut into
/// files, encrypted as asked, with the records the playlists are made from.
///
/// Access units arrive in decoding order; `cut(at:)` closes the current segment and the next access
/// unit opens a new one. Audio frames are grouped into PES packets of at most about 90 ms so that a
/// PCR on an audio-only stream still comes often enough.
final class SegmentedOutput {
    /// One elementary stream of this output.
    struct Track {
        /// The stream slot (video first, then audio in input order).
        var slot: Int
        var codec: ElementaryCodec
        var pid: UInt16
        var streamID: UInt8
        var descriptors: [UInt8]
    }

    /// A finished segment.
    struct Segment {
        var uri: String
        /// Start in 90 kHz: the cut time, or for the first segment its earliest timestamp.
        var start: Int64
        /// The latest presentation end of its access units.
        var end: Int64
        /// Bytes in the file.
        var bytes: Int
        /// The IV of its EXT-X-KEY under AES-128.
        var iv: [UInt8]?
    }

    /// An IDR picture's byte range (PAT, PMT and the picture's PES packets) in a segment.
    struct IFrame {
        var uri: String
        var offset: Int
        var length: Int
        var pts: Int64
    }

    /// Encryption of one output.
    enum Protection {
        case none
        case sampleAES(key: [UInt8], iv: [UInt8])
        /// Whole segments, the IV of segment `n` being `iv + n`.
        case aes128(key: [UInt8], iv: [UInt8])
    }

    /// Largest grouped audio PES payload and duration (90 kHz).
    static let audioPESBytes = 2_930
    static let audioPESDuration: Int64 = 8_100
    /// How far before a PES's DTS its PCR is set (90 kHz): 0.7 s, as FFmpeg's muxer delays.
    static let pcrLead: Int64 = 63_000

    /// The playlist's base name: `video`, `audio` or `audio-N`.
    let name: String
    let tracks: [Track]
    private let directory: String
    private let writer: BackgroundWriter
    private let packedExtension: String?
    private var protection: Protection
    private var sampleAES: SampleAESCipher?
    /// The watermark variant this output writes (`--watermark ab`): its segments are then named
    /// `NAME_00000.a.ts` or `.b.ts`.
    var variant: WatermarkVariant?
    /// The job's key periods when keys rotate (`--key-period`): each segment is then encrypted under its
    /// period's key and IV.
    var ring: KeyRing?
    private var transport: TransportStreamWriter?
    private var file: SegmentFile?
    private var openStart: Int64?
    private var openMinPTS = Int64.max
    private var openEnd = Int64.min
    private var nextStart: Int64?
    private var wroteSinceTables = false
    private var tablesOffset = 0
    private var openIV: [UInt8]?
    private var pending: [Int: (bytes: [UInt8], pts: Int64, duration: Int64)] = [:]
    /// The serialized audio setup information for packed audio's ID3 tags under SAMPLE-AES.
    private let packedAudioSetup: [UInt8]?
    /// Finished segments.
    private(set) var segments: [Segment] = []
    /// IDR pictures, for the I-frame playlist.
    private(set) var iFrames: [IFrame] = []
    /// Access units written per slot.
    private(set) var accessUnitCounts: [Int: Int] = [:]

    /// An output named `name` writing into `directory`; `packedAudio` writes packed audio instead of
    /// TS (one audio track only) and needs the audio setup for its ID3 tag.
    init(
        name: String, tracks: [Track], directory: String, writer: BackgroundWriter, protection: Protection,
        packedAudio: Bool, audioSetup: AudioSetupInformation?
    ) throws(PackagingError) {
        self.name = name
        self.tracks = tracks
        self.directory = directory
        self.writer = writer
        self.protection = protection
        if case .sampleAES(let key, let iv) = protection {
            do {
                sampleAES = try SampleAESCipher(key: key, iv: iv, encrypt: true)
            } catch {
                throw PackagingError(.invalidOptions, "cannot set up SAMPLE-AES: \(error)")
            }
        } else {
            sampleAES = nil
        }
        if packedAudio {
            precondition(tracks.count == 1 && tracks[0].codec.isAudio, "packed audio carries one audio track")
            packedExtension = [.aac: "aac", .ac3: "ac3", .eac3: "ec3"][tracks[0].codec]
            transport = nil
            do {
                packedAudioSetup = sampleAES == nil ? nil : try audioSetup?.serialized()
            } catch {
                throw PackagingError(.inputCorrupt, "cannot describe the audio of \(name) in its ID3 tag: \(error)")
            }
        } else {
            packedExtension = nil
            packedAudioSetup = nil
            let pcrPID = tracks.first { $0.codec == .h264 }?.pid ?? tracks[0].pid
            do {
                transport = try TransportStreamWriter(
                    tracks: tracks.map {
                        TransportStreamTrack(
                            pid: $0.pid, streamType: $0.codec.streamType(encrypted: sampleAES != nil),
                            streamID: $0.streamID, descriptors: $0.descriptors)
                    }, pcrPID: pcrPID)
            } catch {
                throw PackagingError(.inputCorrupt, "cannot describe the streams of \(name) in one PMT: \(error)")
            }
        }
    }

    /// True while a segment is open.
    var hasOpenSegment: Bool { file != nil }

    /// The start of the open segment (90 kHz), or nil: the cut time, or for the first segment its
    /// earliest timestamp. EXTINF durations are measured from the same starts.
    var openSegmentStart: Int64? {
        guard let openStart else { return nil }
        return segments.isEmpty ? min(openStart, openMinPTS) : openStart
    }

    /// The latest presentation end written, over all segments.
    var end: Int64 { max(segments.last?.end ?? Int64.min, openEnd) }

    /// Writes one access unit of stream `slot`; its bytes are encrypted in place, so the caller gives
    /// them up.
    func write(_ unit: inout AccessUnit, slot: Int) throws(PackagingError) {
        guard let index = tracks.firstIndex(where: { $0.slot == slot }) else {
            preconditionFailure("slot \(slot) is not a track of \(name)")
        }
        let track = tracks[index]
        if file == nil { try openSegment(firstPTS: unit.pts) }
        openMinPTS = min(openMinPTS, unit.pts)
        openEnd = max(openEnd, unit.end)
        accessUnitCounts[slot, default: 0] += 1
        guard let file else { return }
        if track.codec == .h264 {
            try writeVideo(&unit, track: index, to: file)
        } else {
            if let sampleAES {
                do {
                    try unit.bytes.withUnsafeMutableBytes { try sampleAES.processAudio($0, codec: track.codec) }
                } catch {
                    throw PackagingError(.inputCorrupt, "cannot encrypt an audio frame of \(name): \(error)")
                }
            }
            if transport == nil {
                file.buffer.append(unit.bytes)
            } else {
                try addAudio(unit, track: index, to: file)
            }
        }
        try file.flushIfNeeded()
    }

    private func writeVideo(_ unit: inout AccessUnit, track index: Int, to file: SegmentFile) throws(PackagingError) {
        guard transport != nil else { return }
        // An I-frame range starts at a PAT: the segment's own when nothing came between, or a fresh one.
        var rangeStart = tablesOffset
        if unit.isRandomAccess && wroteSinceTables {
            rangeStart = file.offset
            transport!.writeProgramTables(to: file.buffer)
        }
        wroteSinceTables = true
        var payload: [UInt8]
        if let sampleAES {
            payload = []
            payload.reserveCapacity(unit.bytes.count + unit.bytes.count / 64 + 64)
            do {
                try sampleAES.encryptVideo(&unit.bytes, nalUnits: unit.nalUnits, appendingTo: &payload)
            } catch {
                throw PackagingError(.outputFailed, "SAMPLE-AES encryption failed: \(error)")
            }
        } else {
            payload = unit.bytes
        }
        do {
            try payload.withBytes { raw throws(FormatError) in
                try self.transport!.writePES(
                    track: index, payload: raw, pts: unit.pts, dts: unit.dts,
                    pcr: (unit.dts - SegmentedOutput.pcrLead) * 300, randomAccess: unit.isRandomAccess,
                    to: file.buffer)
            }
        } catch {
            throw PackagingError(.inputCorrupt, "cannot write video of \(name): \(error)")
        }
        if unit.isRandomAccess, !isWholeSegmentEncrypted {
            iFrames.append(IFrame(uri: currentURI, offset: rangeStart, length: file.offset - rangeStart, pts: unit.pts))
        }
    }

    private var isWholeSegmentEncrypted: Bool {
        if case .aes128 = protection { return true }
        return false
    }

    private func addAudio(_ unit: AccessUnit, track index: Int, to file: SegmentFile) throws(PackagingError) {
        let bytes = unit.bytes
        if let waiting = pending[index],
            waiting.bytes.count + bytes.count > SegmentedOutput.audioPESBytes
                || waiting.duration + unit.duration > SegmentedOutput.audioPESDuration
        {
            try flushAudio(index, to: file)
        }
        if var waiting = pending[index] {
            waiting.bytes.append(contentsOf: bytes)
            waiting.duration += unit.duration
            pending[index] = waiting
        } else {
            pending[index] = (bytes, unit.pts, unit.duration)
        }
    }

    private func flushAudio(_ index: Int, to file: SegmentFile) throws(PackagingError) {
        guard let waiting = pending.removeValue(forKey: index), transport != nil else { return }
        let isPCR = !tracks.contains { $0.codec == .h264 }
        wroteSinceTables = true
        do {
            try waiting.bytes.withBytes { raw throws(FormatError) in
                try self.transport!.writePES(
                    track: index, payload: raw, pts: waiting.pts, dts: nil,
                    pcr: isPCR ? (waiting.pts - SegmentedOutput.pcrLead) * 300 : nil, randomAccess: true,
                    to: file.buffer)
            }
        } catch {
            throw PackagingError(.inputCorrupt, "cannot write audio of \(name): \(error)")
        }
    }

    private var currentURI: String { segmentURI(segments.count) }

    private func segmentURI(_ index: Int) -> String {
        let number = String(index)
        let padded = String(repeating: "0", count: max(0, 5 - number.count)) + number
        let tag = variant.map { "." + $0.rawValue } ?? ""
        return "\(name)_\(padded)\(tag).\(packedExtension ?? "ts")"
    }

    /// Switches the encryption to the key of the period segment `index` is in, when keys rotate.
    private func rotateKey(forSegment index: Int) throws(PackagingError) {
        guard let ring, ring.period != nil else { return }
        let next = try ring.key(forSegment: index)
        switch protection {
        case .none: return
        case .aes128: protection = .aes128(key: next.key, iv: next.iv)
        case .sampleAES(let key, let iv):
            guard key != next.key || iv != next.iv else { return }
            protection = .sampleAES(key: next.key, iv: next.iv)
            do {
                sampleAES = try SampleAESCipher(key: next.key, iv: next.iv, encrypt: true)
            } catch {
                throw PackagingError(.invalidOptions, "cannot set up SAMPLE-AES for a new key period: \(error)")
            }
        }
    }

    private func openSegment(firstPTS: Int64) throws(PackagingError) {
        try rotateKey(forSegment: segments.count)
        let uri = currentURI
        var segmentIV: [UInt8]? = nil
        var aes128: (key: [UInt8], iv: [UInt8])? = nil
        if case .aes128(let key, let iv) = protection {
            segmentIV = SegmentedOutput.add(iv, UInt64(segments.count))
            aes128 = (key, segmentIV!)
        }
        let file = try SegmentFile(path: directory + "/" + uri, aes128: aes128, writer: writer)
        self.file = file
        openStart = nextStart ?? firstPTS
        openMinPTS = nextStart == nil ? firstPTS : Int64.max
        openEnd = Int64.min
        openIV = segmentIV
        if transport != nil {
            tablesOffset = file.offset
            transport!.writeProgramTables(to: file.buffer)
            wroteSinceTables = false
        } else {
            do {
                file.buffer.append(try PackedAudio.id3Tag(timestamp: firstPTS, setup: packedAudioSetup))
            } catch {
                throw PackagingError(.inputCorrupt, "cannot write the ID3 tag of \(uri): \(error)")
            }
        }
    }

    /// Closes the open segment; the next one starts at `time` (90 kHz).
    func cut(at time: Int64) throws(PackagingError) {
        try closeSegment()
        nextStart = time
    }

    /// Closes the last segment.
    func finish() throws(PackagingError) { try closeSegment() }

    private func closeSegment() throws(PackagingError) {
        guard let file else { return }
        for index in pending.keys.sorted() { try flushAudio(index, to: file) }
        let bytes = try file.close()
        let start = openSegmentStart ?? openMinPTS
        segments.append(Segment(uri: currentURI, start: start, end: openEnd, bytes: bytes, iv: openIV))
        self.file = nil
        openStart = nil
    }

    /// Discards the open segment's file descriptor without publishing anything.
    func abandon() { file = nil }

    /// `iv` plus `value` as 128-bit big-endian integers (wrapping).
    static func add(_ iv: [UInt8], _ value: UInt64) -> [UInt8] {
        var result = iv
        var carry = value
        var index = 15
        while carry > 0 && index >= 0 {
            let sum = UInt64(result[index]) + (carry & 0xFF)
            result[index] = UInt8(sum & 0xFF)
            carry = (carry >> 8) + (sum >> 8)
            index -= 1
        }
        return result
    }

    /// Segment durations in seconds: from each start to the next, the last to its end.
    var durations: [Double] {
        segments.indices.map { index in
            let end = index + 1 < segments.count ? segments[index + 1].start : segments[index].end
            return Double(max(end - segments[index].start, 0)) / 90_000
        }
    }

    /// I-frame durations in seconds: from each IDR to the next, the last to the end of the output.
    var iFrameDurations: [Double] {
        iFrames.indices.map { index in
            let end = index + 1 < iFrames.count ? iFrames[index + 1].pts : self.end
            return Double(max(end - iFrames[index].pts, 0)) / 90_000
        }
    }
}

@available(*, unavailable, message: "a SegmentedOutput owns open files")
extension SegmentedOutput: Sendable {}
