import MediaFormats

/// The segments of one CMAF track as they are written: samples gathered until a cut, then one file of
/// a `moof` and an `mdat` (encrypted whole under AES-128), with the records the playlists and the DASH
/// manifest are made from.
final class FragmentedOutput {
    /// A finished segment.
    struct Segment {
        var uri: String
        /// The first sample's decoding time (`tfdt`), in the track's timescale.
        var decodeTime: UInt64
        /// The samples' total duration, in the track's timescale.
        var ticks: UInt64
        /// Bytes in the file.
        var bytes: Int
        /// The IV of its EXT-X-KEY under AES-128.
        var iv: [UInt8]?
    }

    /// The playlist's base name: `video`, `audio` or `audio-N`.
    let name: String
    /// The stream slot (video first, then audio in input order).
    let slot: Int
    /// Ticks per second: 90 kHz for video, the sample rate for audio.
    let timescale: UInt32
    /// The track, once its first sample told what it is.
    var track: FragmentedTrack?
    let directory: String
    let writer: BackgroundWriter
    private let aes128: (key: [UInt8], iv: [UInt8])?
    /// The watermark variant this output writes (`--watermark ab`): its segments are then named
    /// `NAME_00000.a.m4s` or `.b.m4s`, beside one init segment.
    var variant: WatermarkVariant?
    /// The job's key periods when keys rotate: under AES-128 each segment then takes its period's key.
    var ring: KeyRing?
    private var samples: [FragmentSample] = []
    private var decodeTimes: [Int64] = []
    private var lastDuration: Int64 = 1
    /// The open segment's sample bytes, spooled to a scratch file until the cut.
    private let payload: SegmentPayloadSpool
    /// The 90 kHz presentation time the open segment started at, or nil when none is open.
    private(set) var openStart: Int64?
    /// Finished segments.
    private(set) var segments: [Segment] = []
    /// Samples written.
    private(set) var sampleCount = 0

    /// The output of playlist `name`, written into `directory`; `scratchName` names its payload's
    /// scratch file there, unlinked as soon as it is open.
    init(
        name: String, slot: Int, timescale: UInt32, directory: String, writer: BackgroundWriter,
        aes128: (key: [UInt8], iv: [UInt8])?, scratchName: String
    ) throws(PackagingError) {
        payload = try SegmentPayloadSpool(directory: directory, name: scratchName, writer: writer)
        self.name = name
        self.slot = slot
        self.timescale = timescale
        self.directory = directory
        self.writer = writer
        self.aes128 = aes128
    }

    /// The init segment's file name.
    var initURI: String { "\(name)_init.mp4" }

    /// The file name of segment `index`.
    func segmentURI(_ index: Int) -> String {
        let number = String(index)
        return "\(name)_\(String(repeating: "0", count: max(0, 5 - number.count)))\(number)\(tag).m4s"
    }

    /// The DASH media template of the segment names.
    var mediaTemplate: String { "\(name)_$Number%05d$\(tag).m4s" }

    private var tag: String { variant.map { "." + $0.rawValue } ?? "" }

    /// A 90 kHz time in the track's timescale.
    func ticks(_ time: Int64) -> Int64 {
        timescale == 90_000 ? time : Int64((Double(time) * Double(timescale) / 90_000).rounded())
    }

    /// The buffer the next sample's bytes go to, with room for about `count` more bytes: samples are
    /// kept whole in one buffer, so they can be encrypted where they lie.
    func sampleBuffer(reserving count: Int) -> ByteBuffer { payload.sampleBuffer(reserving: count) }

    /// Has the writer encrypt the sample just appended to `sampleBuffer(reserving:)`, before it writes it.
    func encryptLater(_ encryption: DeferredEncryption) { payload.encryptLater(encryption) }

    /// Records a sample whose bytes are final (or to be encrypted by the writer) and already at the end of
    /// `sampleBuffer(reserving:)`; `record` has all but its duration, which the next sample's decoding
    /// time gives. `duration` (track ticks) is used for the last one.
    func appended(record: FragmentSample, decodeTime: Int64, duration: Int64, presentation: Int64) {
        if openStart == nil { openStart = presentation }
        samples.append(record)
        decodeTimes.append(decodeTime)
        lastDuration = max(duration, 1)
        sampleCount += 1
    }

    /// Writes the open segment; the next sample, if any, decodes at `nextDecodeTime` (track ticks).
    func cut(nextDecodeTime: Int64?) throws(PackagingError) {
        guard let track, !samples.isEmpty else { return }
        for index in samples.indices {
            let end =
                index + 1 < decodeTimes.count
                ? decodeTimes[index + 1] : (nextDecodeTime ?? decodeTimes[index] + lastDuration)
            samples[index].duration = UInt32(clamping: max(end - decodeTimes[index], 1))
        }
        let uri = segmentURI(segments.count)
        let first = UInt64(max(decodeTimes[0], 0))
        let header = FragmentedMP4Writer.fragmentHeader(
            track, sequenceNumber: UInt32(segments.count + 1), baseDecodeTime: first, samples: samples)
        var segmentIV: [UInt8]? = nil
        var cipher: (key: [UInt8], iv: [UInt8])? = nil
        if var aes128 {
            if let ring, ring.period != nil {
                let periodKey = try ring.key(forSegment: segments.count)
                aes128 = (periodKey.key, periodKey.iv)
            }
            segmentIV = SegmentedOutput.add(aes128.iv, UInt64(segments.count))
            cipher = (aes128.key, segmentIV!)
        }
        let file = try SegmentFile(path: directory + "/" + uri, aes128: cipher, writer: writer)
        file.buffer.append(header)
        try payload.move(to: file)
        let bytes = try file.close()
        let ticks = samples.reduce(UInt64(0)) { $0 + UInt64($1.duration) }
        segments.append(Segment(uri: uri, decodeTime: first, ticks: ticks, bytes: bytes, iv: segmentIV))
        samples.removeAll(keepingCapacity: true)
        decodeTimes.removeAll(keepingCapacity: true)
        openStart = nil
    }

    /// Writes the init segment (always clear: the playlists name it before any key).
    func writeInitSegment() throws(PackagingError) {
        guard let track else { return }
        let file = try SegmentFile(path: directory + "/" + initURI, aes128: nil, writer: writer)
        file.buffer.append(FragmentedMP4Writer.initSegment(track))
        try file.close()
    }
}

@available(*, unavailable, message: "a FragmentedOutput belongs to one packaging run")
extension FragmentedOutput: Sendable {}
