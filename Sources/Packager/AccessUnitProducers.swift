import MediaCore
import MediaFormats

/// Turns one input stream's packets into access units; the packager and the verifier run the same
/// producers, so the verifier's expected bytes come from exactly the conversion the packager applied.
protocol AccessUnitProducer: AnyObject {
    /// Converts one packet of the stream, appending the access units it yields.
    func accept(_ packet: Packet, into units: inout [AccessUnit]) throws
    /// Appends what is still buffered at the end of the input.
    func finish(into units: inout [AccessUnit]) throws
    /// The clear codec string for CODECS, once known.
    var codecString: String? { get }
    /// The SAMPLE-AES audio setup information, once known (audio only).
    var audioSetup: AudioSetupInformation? { get }
    /// Access units dropped and why, for a notice, or nil.
    var droppedNotice: String? { get }
    /// True while the producer has output to make without another packet (a still image's frames).
    var hasPendingOutput: Bool { get }
    /// Makes some of that output, appending at least one access unit unless it runs out.
    func continueOutput(into units: inout [AccessUnit]) throws
}

extension AccessUnitProducer {
    /// Producers that turn each packet into its units at once have nothing pending.
    var hasPendingOutput: Bool { false }
    func continueOutput(into units: inout [AccessUnit]) throws {}
}

/// Packet timestamps as optionals.
extension Packet {
    var optionalPTS: Int64? { pts == noTimestamp ? nil : pts }
    var optionalDTS: Int64? { dts == noTimestamp ? nil : dts }
}

/// H.264 copied: Annex-B with AUD and in-band parameter sets; access units before the first IDR are
/// dropped so the first segment starts with one.
final class H264Producer: AccessUnitProducer {
    private var converter: H264AnnexBConverter
    private var mapper: TimestampMapper
    private var seenIDR = false
    private var dropped = 0
    private let pictureLimit: PictureSizeLimit
    /// The SPS last checked against `pictureLimit`.
    private var checkedSPS: [UInt8]?

    init(stream: InputStreamDescription, timeBase: Rational, offset: Int64, pictureLimit: PictureSizeLimit) throws {
        converter = try H264AnnexBConverter(extradata: stream.extradata)
        self.pictureLimit = pictureLimit
        let frame = stream.frameRate > 0 ? Int64(90_000 / stream.frameRate) : 3_000
        mapper = TimestampMapper(
            timeBase: (timeBase.numerator, timeBase.denominator), offset: offset, defaultDuration: frame)
        try checkPictureSize()
    }

    func accept(_ packet: Packet, into units: inout [AccessUnit]) throws {
        guard let unit = try packet.withUnsafeBytes({ raw throws(FormatError) in try converter.convert(raw) }) else {
            return
        }
        try checkPictureSize()
        if !seenIDR {
            guard unit.containsIDR else {
                dropped += 1
                return
            }
            seenIDR = true
        }
        let time = mapper.map(pts: packet.optionalPTS, dts: packet.optionalDTS, duration: packet.duration)
        units.append(
            AccessUnit(
                bytes: unit.bytes, nalUnits: unit.nalUnits, pts: time.pts, dts: time.dts, duration: time.duration,
                isRandomAccess: unit.containsIDR))
    }

    func finish(into units: inout [AccessUnit]) throws {}

    /// Refuses a new SPS (from the extradata, or in band later) whose coded size is over the limit, since
    /// FFmpeg probed only the first and a player decoding the output would allocate for it. An SPS this
    /// parser cannot read is left to the decoders, which refuse it themselves.
    private func checkPictureSize() throws(PackagingError) {
        guard let sps = converter.sequenceParameterSet, sps != checkedSPS else { return }
        checkedSPS = sps
        guard let size = try? H264SequenceParameterSet(nal: sps),
            let refusal = pictureLimit.refusal(width: size.width, height: size.height)
        else { return }
        throw PackagingError(
            .unsupportedCodec, "the H.264 SPS says \(refusal): pass --max-pixels to raise the limit if you trust it")
    }

    var codecString: String? { converter.codecString }
    var audioSetup: AudioSetupInformation? { nil }
    var droppedNotice: String? {
        dropped == 0 ? nil : "dropped \(dropped) video frames before the first IDR picture: they cannot be decoded"
    }
}

/// Audio copied: AAC gains ADTS headers (or keeps its own), AC-3 and E-AC-3 pass through; each packet's
/// framing is checked so the encryptor can find every frame.
final class AudioCopyProducer: AccessUnitProducer {
    private let codec: ElementaryCodec
    private var config: AudioSpecificConfig?
    private var adtsConfig: AudioSpecificConfig?
    private var mapper: TimestampMapper
    private(set) var audioSetup: AudioSetupInformation?

    init(
        stream: InputStreamDescription, codec: ElementaryCodec, config: AudioSpecificConfig?, timeBase: Rational,
        offset: Int64
    ) {
        self.codec = codec
        self.config = config
        let samples = codec == .aac ? 1024 : 1536
        let rate = max(stream.sampleRate, 1)
        mapper = TimestampMapper(
            timeBase: (timeBase.numerator, timeBase.denominator), offset: offset,
            defaultDuration: Int64(samples * 90_000 / rate))
        if let config {
            audioSetup = AudioSetupInformation(audioType: config.sampleAESAudioType, setupData: config.bytes)
        }
    }

    func accept(_ packet: Packet, into units: inout [AccessUnit]) throws {
        guard packet.size > 0 else { return }
        var bytes: [UInt8]
        switch codec {
        case .aac:
            if let config {
                // Raw frames from MP4: the AudioSpecificConfig makes the header.
                bytes = try config.adtsHeader(payloadLength: packet.size)
                packet.withUnsafeBytes { bytes.appendBytes($0) }
            } else {
                // Frames that already carry ADTS headers (TS, raw .aac): checked and kept.
                bytes = packet.bytes
                let frames = try bytes.withBytes { raw throws(FormatError) in try ADTSHeader.frames(in: raw) }
                if adtsConfig == nil, let first = frames.first {
                    let header = try bytes.withBytes { raw throws(FormatError) in
                        try ADTSHeader(UnsafeRawBufferPointer(rebasing: raw[first.frame]))
                    }
                    let derived = AudioSpecificConfig(adts: header)
                    audioSetup = AudioSetupInformation(audioType: derived.sampleAESAudioType, setupData: derived.bytes)
                    adtsConfig = derived
                }
            }
        case .ac3, .eac3:
            bytes = packet.bytes
            try bytes.withBytes { raw throws(FormatError) in
                let frames = try AC3SyncFrame.frames(in: raw)
                if audioSetup == nil, let first = frames.first {
                    let setup: [UInt8] =
                        codec == .ac3
                        ? Array(raw[first].prefix(10)) : try AC3SyncFrame.ec3SpecificBox(raw)
                    audioSetup = AudioSetupInformation(audioType: codec == .ac3 ? "zac3" : "zec3", setupData: setup)
                }
            }
        case .h264, .hevc:
            preconditionFailure("AudioCopyProducer given video")
        }
        let time = mapper.map(pts: packet.optionalPTS, dts: packet.optionalDTS, duration: packet.duration)
        units.append(
            AccessUnit(
                bytes: bytes, nalUnits: [], pts: time.pts, dts: time.pts, duration: time.duration,
                isRandomAccess: true))
    }

    func finish(into units: inout [AccessUnit]) throws {}

    var codecString: String? {
        switch codec {
        case .aac: (config ?? adtsConfig)?.codecString
        case .ac3: "ac-3"
        case .eac3: "ec-3"
        case .h264, .hevc: nil
        }
    }

    var droppedNotice: String? { nil }
}
