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

extension Decoder {
    /// Sends `packet` (nil to drain the decoder), calling `drain` to receive frames whenever the decoder
    /// is full, and once more after: how the decoding producers feed their decoders.
    func feed(_ packet: Packet?, drain: () throws -> Void) throws {
        while try !send(packet) { try drain() }
        try drain()
    }
}

/// Packet timestamps as optionals.
extension Packet {
    var optionalPTS: Int64? { pts == noTimestamp ? nil : pts }
    var optionalDTS: Int64? { dts == noTimestamp ? nil : dts }
}

/// Audio copied: AAC gains ADTS headers (or keeps its own), AC-3 and E-AC-3 pass through; each packet's
/// framing is checked so the encryptor can find every frame. For the fMP4 path (`samples`), a raw AAC
/// frame (from MP4) is handed on as the demuxer's packet, which is the CMAF sample as it is.
final class AudioCopyProducer: AccessUnitProducer {
    private let codec: ElementaryCodec
    private let samples: Bool
    private var config: AudioSpecificConfig?
    private var adtsConfig: AudioSpecificConfig?
    private var mapper: TimestampMapper
    private(set) var audioSetup: AudioSetupInformation?

    init(
        stream: InputStreamDescription, codec: ElementaryCodec, config: AudioSpecificConfig?, timeBase: Rational,
        offset: Int64, samples: Bool = false
    ) {
        self.codec = codec
        self.samples = samples && codec == .aac && config != nil
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
        if samples {
            let time = mapper.map(pts: packet.optionalPTS, dts: packet.optionalDTS, duration: packet.duration)
            var unit = AccessUnit(
                bytes: [], nalUnits: [], pts: time.pts, dts: time.pts, duration: time.duration, isRandomAccess: true)
            unit.packet = try packet.reference()
            units.append(unit)
            return
        }
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
