import Crypto
import FoundationEssentials
import MediaFormats
import SystemSupport

/// Checks one media playlist's segments: TS structure and signalling (or packed audio's ID3 tag),
/// decryption of every protected unit, access-unit hygiene, and with a source each access unit's bytes
/// and timestamps.
final class PlaylistVerifier {
    /// Repeated problems of one kind are reported this many times, then counted.
    static let repeatLimit = 5

    let name: String
    private let playlist: ParsedMediaPlaylist
    private let method: String
    private var cipher: SampleAESCipher?
    private let expected: ExpectedAccessUnits?
    /// The first error reading the source gave, which ends the comparison (see `VerificationRun`).
    private(set) var sourceFailure: PackagingError?
    private let slots: [Int]?
    private let read: (String) -> OutputRead

    private(set) var problems: [String] = []
    private(set) var mismatches: [String] = []
    private(set) var mismatchCount = 0
    private var repeats: [String: Int] = [:]
    /// Per PID (−1 for packed audio): the stream's tally.
    private(set) var checks: [Int: VerificationReport.StreamCheck] = [:]
    /// IDR picture digests by segment URI and PTS.
    private(set) var idrPictures: [String: [Int64: [UInt8]]] = [:]
    /// Codec strings found, in PID order.
    private(set) var codecs: [Int: String] = [:]
    private var segmentStarts: [Int64?] = []
    private var signallingChecked = false

    init(
        name: String, playlist: ParsedMediaPlaylist, method: String, cipher: SampleAESCipher?,
        expected: ExpectedAccessUnits?, slots: [Int]?, read: @escaping (String) -> OutputRead
    ) {
        self.name = name
        self.playlist = playlist
        self.method = method
        self.cipher = cipher
        self.expected = expected
        self.slots = slots
        self.read = read
    }

    private func problem(_ text: String, kind: String? = nil) {
        let key = kind ?? text
        repeats[key, default: 0] += 1
        let count = repeats[key]!
        if count <= PlaylistVerifier.repeatLimit {
            problems.append(text)
        } else if count == PlaylistVerifier.repeatLimit + 1 {
            problems.append("\(name): more problems like the above are not listed")
        }
    }

    private func mismatch(_ text: String) {
        mismatchCount += 1
        if mismatches.count < VerificationRun.mismatchLines { mismatches.append(text) }
    }

    /// The slot the output stream on `pid` carries, when a source is compared.
    private func slot(for codec: ElementaryCodec) -> Int? {
        guard let slots, let expected else { return nil }
        return slots.first { (expected.plan.streams[$0].codec == .h264) == (codec == .h264) }
    }

    // MARK: Segments

    func run() {
        var reader = TransportStreamReader(name: name)
        var listed = Set<String>()
        for segment in playlist.segments {
            guard VerificationRun.isPlainFileName(segment.uri) else {
                problem("\(name) line \(segment.line): '\(segment.uri)' is not a file inside the output directory")
                segmentStarts.append(nil)
                continue
            }
            // GuardPlay lists every segment once; a repeat is not read again (a playlist could name one
            // huge file thousands of times).
            guard listed.insert(segment.uri).inserted else {
                problem("\(name) line \(segment.line): segment \(segment.uri) is listed again", kind: "repeat")
                segmentStarts.append(nil)
                continue
            }
            var bytes: [UInt8]
            switch read(segment.uri) {
            case .bytes(let read): bytes = read
            case .unreadable:
                problem("\(name): segment \(segment.uri) is missing, unreadable or over 512 MiB")
                segmentStarts.append(nil)
                continue
            case .overBudget:
                problem(
                    "\(name): verification stopped before \(segment.uri): the playlists ask to read more than "
                        + "\(VerificationRun.readLimit >> 30) GiB from the output")
                return
            }
            if periods != nil {
                // A rotated output: this segment's key is the one its key line names.
                expectedKey = periods!.key(for: segment.key)
                if method == "SAMPLE-AES" { cipher = periods!.sampleAESCipher(for: segment.key) }
            }
            if method == "AES-128" {
                guard let decrypted = decryptWhole(bytes, segment: segment) else {
                    segmentStarts.append(nil)
                    continue
                }
                bytes = decrypted
            }
            let packedCodec: ElementaryCodec? =
                segment.uri.hasSuffix(".aac")
                ? .aac
                : segment.uri.hasSuffix(".ac3") ? .ac3 : segment.uri.hasSuffix(".ec3") ? .eac3 : nil
            if let packedCodec {
                segmentStarts.append(verifyPacked(bytes, codec: packedCodec, segment: segment))
            } else {
                segmentStarts.append(verifyTransport(bytes, segment: segment, reader: &reader))
            }
        }
        checkDurations()
        finishComparison()
    }

    private func decryptWhole(_ bytes: [UInt8], segment: ParsedMediaPlaylist.Segment) -> [UInt8]? {
        guard let key = expectedKey, let ivText = segment.key?["IV"], let iv = [UInt8](hex: ivText), iv.count == 16
        else {
            problem("\(name): \(segment.uri) has no usable AES-128 key line")
            return nil
        }
        do {
            return try AES128Padded.decrypt(bytes, key: key, iv: iv)
        } catch {
            problem("\(name): \(segment.uri) does not decrypt with AES-128 and its IV: \(error)")
            return nil
        }
    }

    /// The content key, for whole-segment AES-128.
    var expectedKey: [UInt8]?
    /// The key list of a rotated output, whose keys the segments' key lines name.
    var periods: KeyPeriodCheck?

    private func verifyTransport(
        _ bytes: [UInt8], segment: ParsedMediaPlaylist.Segment, reader: inout TransportStreamReader
    ) -> Int64? {
        let uri = segment.uri
        guard bytes.count >= 376, bytes.count % 188 == 0 else {
            problem("\(name): \(uri) is \(bytes.count) bytes, not whole TS packets starting with PAT and PMT")
            return nil
        }
        let pids = (0..<2).map { UInt16(bytes[188 * $0 + 1] & 0x1F) << 8 | UInt16(bytes[188 * $0 + 2]) }
        let packets: [PESPacket]
        do {
            packets = try reader.readAll(bytes)
        } catch {
            problem("\(name): \(error)")
            return nil
        }
        for issue in reader.issues { problem(issue, kind: "ts-issue") }
        guard let map = reader.programMap else {
            problem("\(name): \(uri) has no PMT")
            return nil
        }
        if pids[0] != 0 || pids[1] != reader.programMapPID {
            problem("\(name): \(uri) does not start with a PAT and a PMT", kind: "tables-first")
        }
        if !signallingChecked {
            signallingChecked = true
            checkSignalling(map)
        }
        let pcrSeen = packets.contains { $0.pid == map.pcrPID && $0.pcr != nil }
        if !pcrSeen { problem("\(name): \(uri) carries no PCR on PID \(map.pcrPID)", kind: "pcr") }
        var start: Int64? = nil
        var videoStart: Int64? = nil
        var firstVideo = true
        for packet in packets {
            guard let entry = map.streams.first(where: { $0.pid == packet.pid }),
                let (codec, _) = ElementaryCodec.from(streamType: entry.streamType)
            else { continue }
            guard let pts = packet.pts else {
                problem("\(name): a PES in \(uri) has no PTS", kind: "no-pts")
                continue
            }
            start = min(start ?? pts, pts)
            if codec == .h264 {
                if videoStart == nil { videoStart = pts }
                verifyVideo(packet, uri: uri, first: firstVideo)
                firstVideo = false
            } else {
                verifyAudio(packet.payload, pts: pts, codec: codec, pid: Int(packet.pid), uri: uri)
            }
        }
        return videoStart ?? start
    }

    private func verifyPacked(_ bytes: [UInt8], codec: ElementaryCodec, segment: ParsedMediaPlaylist.Segment) -> Int64?
    {
        let tag: PackedAudio.Tag
        do {
            tag = try PackedAudio.parseTag(bytes)
        } catch {
            problem("\(name): \(segment.uri): \(error)")
            return nil
        }
        guard let stamp = tag.privateFrames[PackedAudio.timestampOwner], stamp.count == 8, stamp[0..<3] == [0, 0, 0],
            stamp[3] <= 1
        else {
            problem("\(name): \(segment.uri) lacks a valid \(PackedAudio.timestampOwner) PRIV frame")
            return nil
        }
        let pts = Int64(stamp.bigEndianUInt32(at: 0)) << 32 | Int64(stamp.bigEndianUInt32(at: 4))
        if method == "SAMPLE-AES" {
            if let description = tag.privateFrames[PackedAudio.audioDescriptionOwner] {
                checkSetup(description, codec: codec, place: "\(segment.uri) audioDescription")
            } else {
                problem("\(name): \(segment.uri) lacks the audioDescription PRIV frame SAMPLE-AES needs")
            }
        }
        verifyAudio(Array(bytes[tag.length...]), pts: pts, codec: codec, pid: -1, uri: segment.uri)
        return pts
    }

    // MARK: Signalling

    private func checkSignalling(_ map: ProgramMap) {
        let encrypted = method == "SAMPLE-AES"
        if !map.streams.contains(where: { $0.pid == map.pcrPID }) {
            problem("\(name): the PCR PID \(map.pcrPID) carries no elementary stream")
        }
        for entry in map.streams {
            guard let (codec, isEncrypted) = ElementaryCodec.from(streamType: entry.streamType) else {
                problem(
                    "\(name): PID \(entry.pid) has stream type 0x\(String(entry.streamType, radix: 16)), which HLS TS does not carry"
                )
                continue
            }
            if isEncrypted != encrypted {
                problem(
                    "\(name): PID \(entry.pid) has stream type 0x\(String(entry.streamType, radix: 16)) in a "
                        + "\(encrypted ? "SAMPLE-AES" : "clear") stream")
            }
            guard encrypted else { continue }
            guard let descriptors = entry.parsedDescriptors else {
                problem("\(name): PID \(entry.pid) has malformed descriptors")
                continue
            }
            let indicator = descriptors.first { $0.tag == 0x0F }
            if indicator?.body != Array(codec.privateDataIndicator.utf8) {
                problem("\(name): PID \(entry.pid) lacks the private_data_indicator '\(codec.privateDataIndicator)'")
            }
            if codec.isAudio {
                guard
                    let registration = descriptors.first(where: {
                        $0.tag == 0x05 && $0.body.starts(with: Array("apad".utf8))
                    })
                else {
                    problem("\(name): audio PID \(entry.pid) lacks the 'apad' registration descriptor")
                    continue
                }
                checkSetup(Array(registration.body.dropFirst(4)), codec: codec, place: "PID \(entry.pid) 'apad'")
            }
        }
    }

    private func checkSetup(_ bytes: [UInt8], codec: ElementaryCodec, place: String) {
        let setup: AudioSetupInformation
        do {
            setup = try AudioSetupInformation(bytes: bytes)
        } catch {
            problem("\(name): \(place): \(error)")
            return
        }
        let allowed: [String] =
            switch codec {
            case .aac: ["zaac", "zach", "zacp"]
            case .ac3: ["zac3"]
            case .eac3: ["zec3"]
            case .h264, .hevc: []
            }
        if !allowed.contains(setup.audioType) {
            problem("\(name): \(place) names audio type '\(setup.audioType)' for \(codec.rawValue)")
        }
        switch codec {
        case .aac:
            if (try? AudioSpecificConfig(setup.setupData)) == nil {
                problem("\(name): \(place) setup data is not an AudioSpecificConfig")
            }
        case .ac3:
            if setup.setupData.count != 10 || setup.setupData.first != 0x0B || setup.setupData.dropFirst().first != 0x77
            {
                problem("\(name): \(place) setup data is not the first 10 bytes of an AC-3 syncframe")
            }
        case .eac3:
            if setup.setupData.count < 5 { problem("\(name): \(place) setup data is too short for a dec3 box") }
        case .h264, .hevc:
            break
        }
    }

    // MARK: Access units

    private func tally(_ pid: Int, _ codec: ElementaryCodec) -> VerificationReport.StreamCheck {
        checks[pid]
            ?? VerificationReport.StreamCheck(
                playlist: name, kind: codec == .h264 ? "video" : "audio", codec: codec.rawValue,
                pid: pid >= 0 ? pid : nil, frames: 0, decryptedUnits: 0, framesEqual: expected == nil ? nil : 0,
                sourceFrames: nil, comparison: slot(for: codec).map { expected!.comparison($0) })
    }

    /// The source's next access unit for `slot`, or nil after reporting why there is none.
    private func nextExpected(_ slot: Int, else missing: String) -> AccessUnit? {
        guard let expected else { return nil }
        do {
            if let unit = try expected.next(slot) { return unit }
            mismatch("\(name): \(missing)")
        } catch {
            sourceFailure = sourceFailure ?? error
            mismatch("\(name): the source stops being readable: \(error.message)")
        }
        return nil
    }

    /// The NAL units of an Annex-B access unit, decrypted when the output is SAMPLE-AES.
    static func clearNALUnits(_ payload: [UInt8], cipher: SampleAESCipher?) throws(CryptoError) -> [[UInt8]] {
        try payload.withBytes { raw throws(CryptoError) in
            if let cipher { return try cipher.decryptVideo(raw) }
            return NALUnitSplitter.annexB(raw).map { Array(raw[$0]) }
        }
    }

    private func verifyVideo(_ packet: PESPacket, uri: String, first: Bool) {
        var check = tally(Int(packet.pid), .h264)
        defer { checks[Int(packet.pid)] = check }
        check.frames += 1
        let nals: [[UInt8]]
        do {
            if cipher != nil {
                check.decryptedUnits += packet.payload.withUnsafeBytes { raw in
                    NALUnitSplitter.annexB(raw).filter {
                        SampleAESCipher.isProtectedNALType(raw[$0.lowerBound])
                            && $0.count > SampleAESCipher.videoMinimumProtectedLength
                    }.count
                }
            }
            nals = try PlaylistVerifier.clearNALUnits(packet.payload, cipher: cipher)
        } catch {
            problem("\(name): cannot decrypt a video frame in \(uri): \(error)")
            return
        }
        let types = nals.map { NALUnitType.of($0[0]) }
        if types.first != NALUnitType.accessUnitDelimiter {
            problem("\(name): a video access unit in \(uri) does not start with an AUD", kind: "aud")
        }
        if nals.contains(where: { $0[0] & 0x80 != 0 }) {
            problem("\(name): a NAL unit in \(uri) has forbidden_zero_bit set (wrong key?)", kind: "forbidden")
        }
        let isIDR = types.contains(NALUnitType.idrSlice)
        if isIDR {
            let firstSlice = types.firstIndex { $0 == NALUnitType.idrSlice || $0 == NALUnitType.nonIDRSlice } ?? 0
            let before = types[..<firstSlice]
            if !before.contains(NALUnitType.sequenceParameterSet) || !before.contains(NALUnitType.pictureParameterSet) {
                problem("\(name): an IDR access unit in \(uri) lacks SPS and PPS before its slices", kind: "sps")
            }
            idrPictures[uri, default: [:]][packet.pts ?? 0] = PlaylistVerifier.digest(of: nals)
        }
        if first && !isIDR { problem("\(name): segment \(uri) does not start with an IDR picture") }
        if codecs[Int(packet.pid)] == nil,
            let sps = nals.first(where: { NALUnitType.of($0[0]) == NALUnitType.sequenceParameterSet })
        {
            codecs[Int(packet.pid)] = H264CodecString.make(sps: sps)
        }
        guard let slot = slot(for: .h264),
            let unit = nextExpected(
                slot, else: "video frame \(check.frames) in \(uri) has no counterpart in the source")
        else { return }
        let source = unit.nalUnits.map { Array(unit.bytes[$0]) }
        let timesEqual = packet.pts == unit.pts && (packet.dts ?? packet.pts) == unit.dts
        if source == nals && timesEqual {
            check.framesEqual! += 1
        } else if source != nals {
            mismatch("\(name): video frame \(check.frames) (pts \(unit.pts)) in \(uri) differs from the source")
        } else {
            mismatch(
                "\(name): video frame \(check.frames) in \(uri) has pts/dts \(packet.pts ?? -1)/\(packet.dts ?? packet.pts ?? -1), "
                    + "the source \(unit.pts)/\(unit.dts)")
        }
    }

    private func verifyAudio(_ bytes: [UInt8], pts: Int64, codec: ElementaryCodec, pid: Int, uri: String) {
        var check = tally(pid, codec)
        defer { checks[pid] = check }
        var payload = bytes
        var frames: [(frame: Range<Int>, header: Int)]
        do {
            frames = try payload.withBytes { raw throws(FormatError) in
                codec == .aac ? try ADTSHeader.frames(in: raw) : try AC3SyncFrame.frames(in: raw).map { ($0, 0) }
            }
            if let cipher { try payload.withUnsafeMutableBytes { try cipher.processAudio($0, codec: codec) } }
        } catch {
            problem("\(name): audio in \(uri) is not whole \(codec.rawValue) frames: \(error)", kind: "audio-framing")
            return
        }
        check.frames += frames.count
        if cipher != nil {
            check.decryptedUnits += frames.filter { $0.frame.count - $0.header - (codec == .aac ? 16 : 16) >= 16 }.count
        }
        if codecs[pid] == nil, let first = frames.first {
            codecs[pid] =
                switch codec {
                case .aac: "mp4a.40.\(Int(payload[first.frame.lowerBound + 2] >> 6) + 1)"
                case .ac3: "ac-3"
                case .eac3: "ec-3"
                case .h264, .hevc: nil
                }
        }
        guard let slot = slot(for: codec) else { return }
        var offset = 0
        var firstUnit = true
        while offset < payload.count {
            guard let unit = nextExpected(slot, else: "audio in \(uri) goes on past the end of the source's stream")
            else { return }
            let end = offset + unit.bytes.count
            guard end <= payload.count, payload[offset..<end].elementsEqual(unit.bytes) else {
                mismatch("\(name): an audio frame (pts \(unit.pts)) in \(uri) differs from the source")
                return
            }
            if firstUnit && unit.pts != pts {
                mismatch("\(name): audio in \(uri) has pts \(pts), the source \(unit.pts)")
            } else {
                let inside = frames.filter { $0.frame.lowerBound >= offset && $0.frame.upperBound <= end }.count
                check.framesEqual! += inside
            }
            firstUnit = false
            offset = end
        }
    }

    /// A digest of a picture's NAL units (each with its length), to compare pictures without keeping them.
    static func digest(of nals: [[UInt8]]) -> [UInt8] {
        var input: [UInt8] = []
        for nal in nals {
            input.appendBigEndian(UInt32(nal.count))
            input += nal
        }
        return Digest.sha256(input)
    }

    // MARK: Wrap-up

    private func checkDurations() {
        let audioOnly = !checks.values.contains { $0.kind == "video" }
        let tolerance = audioOnly ? 0.1 : 0.002
        for index in 0..<max(0, segmentStarts.count - 1) {
            guard let start = segmentStarts[index], let next = segmentStarts[index + 1] else { continue }
            let content = Double(next - start) / 90_000
            let declared = playlist.segments[index].duration
            let tooShort = declared < content - tolerance
            let tooLong = declared > content + (index == 0 ? 0.5 : tolerance)
            if tooShort || tooLong {
                problem(
                    "\(name): EXTINF \(declared) of \(playlist.segments[index].uri) does not match its content "
                        + "(\(String(cFormat: "%.6f", content)) s to the next segment)")
            }
        }
    }

    private func finishComparison() {
        guard let expected, let slots else { return }
        for slot in slots {
            let isVideo = expected.plan.streams[slot].codec == .h264
            if !checks.values.contains(where: { ($0.kind == "video") == isVideo }) {
                mismatch("\(name): the source's \(isVideo ? "video" : "audio") stream is missing from the output")
            }
        }
        for (pid, check) in checks {
            guard let slot = slot(for: ElementaryCodec(rawValue: check.codec) ?? .aac) else { continue }
            do {
                let left = try expected.remaining(slot)
                var updated = check
                updated.sourceFrames = expected.delivered[slot, default: 0] + left
                checks[pid] = updated
                if left > 0 {
                    mismatch("\(name): the source has \(left) more \(check.kind) access units than the output")
                }
            } catch {
                sourceFailure = sourceFailure ?? error
                mismatch("\(name): the source stops being readable: \(error.message)")
            }
        }
    }
}

@available(*, unavailable, message: "it holds a cipher context")
extension PlaylistVerifier: Sendable {}
