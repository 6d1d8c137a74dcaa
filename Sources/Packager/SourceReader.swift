import FoundationEssentials
import MediaCore
import MediaFormats
import Protection
import SystemSupport

/// What the output needs to know about one planned stream once its first access units were seen.
struct StreamDetails: Sendable, Equatable {
    /// The clear codec for CODECS: `avc1.PPCCLL`, `mp4a.40.2`, `ac-3`, `ec-3`.
    var codecString: String
    /// The SAMPLE-AES audio setup information (audio only).
    var audioSetup: AudioSetupInformation?
    var width = 0
    var height = 0
    var frameRate = 0.0
    var channels = 0
}

/// Reads an input with libavformat and yields its planned streams as access units, in the order the
/// demuxer interleaves them.
///
/// On opening it checks the input (missing, empty, text, already encrypted, no usable stream) and
/// reads ahead until every stream has shown its first access unit, so codec strings and audio setup
/// information are known before the first segment is written. The packager and the verifier both read
/// sources through it.
final class SourceReader {
    /// Which input streams are carried, and how.
    let plan: StreamPlan
    /// Details per stream slot (video first), known after the read-ahead.
    private(set) var details: [StreamDetails] = []
    /// The input's duration in seconds, when the container says.
    let duration: Double?
    /// Notices about the conversion, in order.
    private(set) var notices: [String]

    private let input: InputContext
    private let path: String
    /// Frames per second of the video made from a still (60 with `--flicker`).
    private let stillFrameRate: Int32
    private let packet = Packet()
    private var producers: [Int: (slot: Int, producer: any AccessUnitProducer)] = [:]
    /// The producers in stream order.
    private var ordered: [(slot: Int, producer: any AccessUnitProducer)] = []
    /// Access units read but not yet handed out; a slot is emptied as its unit is handed out, so the
    /// caller owns the bytes alone and can encrypt them in place.
    private var ready: [(slot: Int, unit: AccessUnit)?] = []
    private var readyHead = 0
    private var packetsRead: [Int: Int64] = [:]
    private var declaredFrames: [Int: Int64] = [:]
    private var finished = false
    private let startTime: Double
    /// The presentation time of the latest access unit read, in seconds from the start.
    private(set) var position: Double = 0

    /// Opens `path` and plans it; `stillFrames` and `stillGOP` shape the video made from a still image,
    /// and `flicker` makes it flicker over that area (refused for any other input). Video with pictures
    /// over `maxPixels` is refused before any decoder allocates for it. `watermark` re-encodes H.264
    /// video as the two variants of `WatermarkProducer`, for segments of that duration (refused for
    /// input without H.264 video). When `cmafSamples` says so for the plan, copied H.264 and HEVC video
    /// and raw AAC come as the demuxer's packets (`AccessUnit.packet`), as the fMP4 path takes them,
    /// rather than converted to Annex-B and ADTS.
    init(
        path: String, stillFrames: Int, stillGOP: Int, maxPixels: Int, flicker: FlickerArea? = nil,
        watermark: (pattern: WatermarkPattern, segmentDuration: Double)? = nil,
        cmafSamples: (StreamPlan) -> Bool = { _ in false }
    ) throws(PackagingError) {
        // Every packet is a block of its own; a moving mmap threshold would make later ones fragment the heap.
        AllocatorTuning.fixMmapThreshold()
        try InputCheck.preflight(path)
        let opened: InputContext
        do {
            // The file: protocol keeps FFmpeg from reading a path with a colon as a protocol name.
            let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
            opened = try InputContext(
                path: "file:" + absolute, pictureLimit: PictureSizeLimit(maxPixels: maxPixels))
        } catch {
            // Probing that ends in anything but a missing file or a truncated one (MediaCore's shared
            // classification) means FFmpeg knows no format for it.
            if error.kind == .invalidData || error.kind == .other,
                error.operation.hasPrefix("avformat_open_input")
            {
                throw PackagingError(
                    .inputUnrecognised, "input \(path) is not in a media format FFmpeg recognises (\(error.message))")
            }
            throw InputCheck.classify(error, path: path)
        }
        input = opened
        self.path = path
        stillFrameRate = flicker == nil ? StillImageProducer.frameRate : StillFlicker.frameRate
        if opened.formatName == "hls" || opened.formatName == "dash" {
            throw PackagingError(
                .inputNotMedia, "\(path) is a streaming playlist, not a media file: package the original media")
        }
        if opened.formatName == "mpegts" { try InputCheck.refuseSampleAESTransportStream(path) }
        let descriptions = opened.streams.map(InputCheck.describe)
        plan = try StreamPlan.make(streams: descriptions, formatName: opened.formatName)
        notices = plan.notices
        if flicker != nil && !plan.streams.contains(where: { $0.handling == .encodeStill }) {
            throw PackagingError(
                .invalidOptions, "--flicker makes a flickering video of a still image, and \(path) is not one")
        }
        if watermark != nil { try Self.checkWatermarkable(plan, path: path) }
        duration = opened.durationSeconds
        startTime = opened.startSeconds
        let offset = TimestampMapper.startOffset - Int64((startTime * 90_000).rounded())
        let samples = cmafSamples(plan)
        for (slot, planned) in plan.streams.enumerated() {
            let info = opened.streams[planned.source.index]
            if info.frameCount > 0 { declaredFrames[planned.source.index] = info.frameCount }
            let producer: any AccessUnitProducer
            do {
                switch planned.handling {
                case .copyH264 where watermark != nil:
                    producer = try WatermarkProducer(
                        input: opened, stream: planned.source, timeBase: info.timeBase, offset: offset,
                        pattern: watermark!.pattern, segmentDuration: watermark!.segmentDuration)
                case .copyH264:
                    producer = try H264Producer(
                        stream: planned.source, timeBase: info.timeBase, offset: offset,
                        pictureLimit: opened.pictureLimit, samples: samples)
                case .copyHEVC:
                    producer = try HEVCProducer(
                        stream: planned.source, timeBase: info.timeBase, offset: offset,
                        pictureLimit: opened.pictureLimit, samples: samples)
                case .copyAAC(let config):
                    producer = AudioCopyProducer(
                        stream: planned.source, codec: .aac, config: config, timeBase: info.timeBase, offset: offset,
                        samples: samples)
                case .copyADTS, .copyDolby:
                    producer = AudioCopyProducer(
                        stream: planned.source, codec: planned.codec, config: nil, timeBase: info.timeBase,
                        offset: offset)
                case .transcodeToAAC:
                    producer = try AACTranscodeProducer(input: opened, stream: planned.source, offset: offset)
                case .encodeStill:
                    producer = try StillImageProducer(
                        input: opened, stream: planned.source, frameCount: stillFrames, gop: stillGOP,
                        flicker: flicker)
                }
            } catch {
                throw InputCheck.classify(error, path: path)
            }
            producers[planned.source.index] = (slot, producer)
        }
        ordered = producers.keys.sorted().map { producers[$0]! }
        try readAhead()
    }

    /// Refuses a plan `--watermark ab` cannot mark: no video, a still image, HEVC.
    static func checkWatermarkable(_ plan: StreamPlan, path: String) throws(PackagingError) {
        guard let video = plan.video else {
            throw PackagingError(
                .invalidOptions,
                "--watermark ab marks the video, and \(path) has none (audio only): leave --watermark out")
        }
        switch video.handling {
        case .copyH264: return
        case .encodeStill:
            throw PackagingError(
                .invalidOptions,
                "--watermark ab marks segments of a video, and \(path) is a still image: leave --watermark out")
        default:
            throw PackagingError(
                .unsupportedCodec,
                "--watermark ab re-encodes H.264 video with libx264, and the video of \(path) is "
                    + "\(video.source.codecName): convert it to H.264 first (ffmpeg -i IN -c:v libx264 -crf 16 OUT.mp4)"
            )
        }
    }

    /// Reads until every stream has produced an access unit (or the input ends), then fills `details`.
    private func readAhead() throws(PackagingError) {
        var seen = Set<Int>()
        var packets = 0
        while seen.count < producers.count && !finished && packets < 5_000 {
            try readPacket()
            packets += 1
            for entry in ready[readyHead...] { if let entry { seen.insert(entry.slot) } }
        }
        for planned in plan.streams {
            guard let producer = producers[planned.source.index]?.producer else { continue }
            let kind = planned.codec.isAudio ? "audio" : "video"
            guard let codec = producer.codecString else {
                throw PackagingError(
                    .inputCorrupt,
                    "\(path): \(kind) stream \(planned.source.index) yields no \(planned.codec.rawValue) access unit "
                        + "in its first \(packets) packets")
            }
            var detail = StreamDetails(codecString: codec, audioSetup: producer.audioSetup)
            if !planned.codec.isAudio {
                detail.width = planned.source.width
                detail.height = planned.source.height
                detail.frameRate = planned.source.frameRate
                if planned.handling == .encodeStill {
                    detail.width = max(planned.source.width & ~1, 2)
                    detail.height = max(planned.source.height & ~1, 2)
                    detail.frameRate = Double(stillFrameRate)
                }
            } else {
                detail.channels = min(max(planned.source.channelCount, 1), 8)
                if planned.codec.isAudio && detail.audioSetup == nil {
                    throw PackagingError(
                        .inputCorrupt, "\(path): audio stream \(planned.source.index) has no frame to describe it")
                }
            }
            details.append(detail)
        }
    }

    /// The next access unit and the slot of its stream, or nil at the end of the input.
    func next() throws(PackagingError) -> (slot: Int, unit: AccessUnit)? {
        while readyHead == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
            if try continuePendingOutput() { continue }
            if finished { return nil }
            try readPacket()
        }
        let entry = ready[readyHead]
        ready[readyHead] = nil
        readyHead += 1
        return entry
    }

    /// Lets the first producer with output pending (a still image being encoded) make some; false when
    /// none has any.
    private func continuePendingOutput() throws(PackagingError) -> Bool {
        for (slot, producer) in ordered {
            guard producer.hasPendingOutput else { continue }
            var units: [AccessUnit] = []
            do {
                try producer.continueOutput(into: &units)
            } catch {
                throw InputCheck.classify(error, path: path)
            }
            append(units, slot: slot)
            return true
        }
        return false
    }

    private func readPacket() throws(PackagingError) {
        var units: [AccessUnit] = []
        let step: ReadStep
        do {
            step = try input.read(into: packet)
        } catch {
            throw PackagingError(
                .inputCorrupt, "\(path) is corrupt: \(error.message) (at \(String(cFormat: "%.2f", position)) s)")
        }
        if step == .endOfStream {
            finished = true
            try checkComplete()
            for (slot, producer) in ordered {
                do {
                    try producer.finish(into: &units)
                } catch {
                    throw InputCheck.classify(error, path: path)
                }
                append(units, slot: slot)
                units.removeAll()
                if let notice = producer.droppedNotice { notices.append(notice) }
            }
            return
        }
        guard let (slot, producer) = producers[packet.streamIndex] else { return }
        if packet.isCorrupt {
            throw PackagingError(
                .inputCorrupt,
                "input \(path) is corrupt or cut short: the demuxer flags a packet of stream \(packet.streamIndex) "
                    + "as damaged (after \(String(cFormat: "%.2f", position)) s)")
        }
        if packet.isEncrypted {
            throw PackagingError(
                .encryptedInput,
                "stream \(packet.streamIndex) of \(path) is already CENC encrypted ('encv'/'enca' samples with "
                    + "encryption info); GuardPlay packages clear sources only: use the clear mezzanine file, or "
                    + "decrypt it first (ffmpeg -decryption_key KEY -i IN -c copy OUT.mp4)")
        }
        packetsRead[packet.streamIndex, default: 0] += 1
        do {
            try producer.accept(packet, into: &units)
        } catch {
            throw InputCheck.classify(error, path: path)
        }
        append(units, slot: slot)
    }

    private func append(_ units: [AccessUnit], slot: Int) {
        for unit in units {
            ready.append((slot, unit))
            position = max(position, Double(unit.pts - TimestampMapper.startOffset) / 90_000)
        }
    }

    private func checkComplete() throws(PackagingError) {
        for (index, declared) in declaredFrames.sorted(by: { $0.key < $1.key }) {
            let read = packetsRead[index, default: 0]
            if read < declared {
                throw PackagingError(
                    .inputCorrupt,
                    "\(path) is cut short: stream \(index) declares \(declared) frames but only \(read) could be read")
            }
        }
    }
}

@available(*, unavailable, message: "a SourceReader owns one demuxer")
extension SourceReader: Sendable {}
