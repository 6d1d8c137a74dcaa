import Crypto
import MediaFormats

/// One packaging job's run in CMAF: a track per rendition (video, each audio stream), each written as
/// an init segment and `moof`+`mdat` segments, with SAMPLE-AES as CENC `cbcs`, or `cenc`, AES-128 or
/// none; then the media playlists (EXT-X-MAP), the master playlist and the DASH manifest.
struct FragmentedPackagingRun {
    let options: PackagingOptions
    let reader: SourceReader
    let directory: OutputDirectory
    let writer: BackgroundWriter
    let keys: KeyMaterial
    let progress: (@Sendable (PackagingProgress) -> Void)?
    let cancellation: PackagingCancellation?

    var scheme: CENCScheme? {
        switch options.encryption {
        case .sampleAES: .cbcs
        case .cenc: .cenc
        case .aes128, .none: nil
        }
    }

    mutating func execute() throws(PackagingError) -> PackagingResult {
        let plan = reader.plan
        let details = reader.details
        let streams = plan.streams
        let layout = OutputLayout(hasVideo: plan.video != nil, audioCount: plan.audio.count, separateAudio: true)
        var outputs: [FragmentedOutput] = []
        var outputOfSlot: [Int: FragmentedOutput] = [:]
        let aes128 = options.encryption == .aes128 ? (keys.key, keys.iv) : nil
        for playlist in layout.playlists {
            let slot = playlist.slots[0]
            var timescale: UInt32 = 90_000
            if streams[slot].codec == .aac {
                timescale = UInt32(try audioConfig(details[slot], streams[slot]).sampleRate)
            } else if streams[slot].codec.isDolby, streams[slot].source.sampleRate > 0 {
                timescale = UInt32(streams[slot].source.sampleRate)
            }
            let output = try FragmentedOutput(
                name: playlist.name, slot: slot, timescale: timescale, directory: directory.temporary,
                writer: writer, aes128: aes128, scratchName: ".\(playlist.name).samples")
            output.ring = keys.ring
            outputs.append(output)
            outputOfSlot[slot] = output
        }
        // --watermark: variant B of the video in a second output of the same name, sharing A's init segment.
        var variantB: FragmentedOutput? = nil
        if options.watermark != nil, plan.video != nil, let video = outputOfSlot[0] {
            video.variant = .a
            let other = try FragmentedOutput(
                name: video.name, slot: 0, timescale: video.timescale, directory: directory.temporary, writer: writer,
                aes128: aes128, scratchName: ".\(video.name).b.samples")
            other.ring = keys.ring
            other.variant = .b
            variantB = other
        }

        let ciphers = scheme.map { PeriodCiphers(scheme: $0, ring: keys.ring) }
        var ivCounter = keys.iv.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        func nextIV() -> [UInt8] {
            defer { ivCounter &+= 1 }
            return (0..<8).map { UInt8(truncatingIfNeeded: ivCounter >> (56 - 8 * $0)) }
        }
        var builder = VideoSampleConversion(codec: plan.video?.codec ?? .h264)
        var builderB = builder
        let target = Int64((options.segmentDuration * 90_000).rounded())
        // Where the audio's cut grid starts (90 kHz): the video's first picture, on whose grid GOP-aligned
        // video is cut; without video (or before it starts) the presentation's start.
        var videoStart: Int64? = nil
        var lastReported = -1.0
        while case (let slot, let unit)? = try reader.next() {
            if cancellation?.isCancelled == true { throw PackagingError(.cancelled, "packaging was cancelled") }
            let isB = unit.variant == .b
            let output = isB ? variantB! : outputOfSlot[slot]!
            let planned = streams[slot]
            // Video is cut at the first random-access unit a target duration past the segment's start,
            // audio (below) at the first frame on or past the track's next grid line.
            if !planned.codec.isAudio, unit.isRandomAccess, let start = output.openStart,
                unit.pts - start >= target - PackagingJob.cutTolerance
            {
                try output.cut(nextDecodeTime: output.ticks(unit.dts))
            }
            if !planned.codec.isAudio {
                if videoStart == nil { videoStart = unit.pts }
                // The sample is built at the end of the segment's payload and encrypted there.
                let buffer = output.sampleBuffer(reserving: unit.size)
                let start = buffer.count
                let units: [(size: Int, clear: Int)]
                do {
                    units = isB ? try builderB.append(unit, to: buffer) : try builder.append(unit, to: buffer)
                } catch {
                    throw PackagingError(
                        error.kind == .unsupported ? .unsupportedCodec : .inputCorrupt,
                        "\(options.input): the video frame at \(Self.seconds(unit.pts)) s (frame \(output.sampleCount)) "
                            + "cannot be packaged: \(error)")
                }
                if output.track == nil {
                    output.track = try videoTrack(builder: isB ? builderB : builder, detail: details[slot])
                }
                var record = FragmentSample(
                    size: buffer.count - start, duration: 0, compositionOffset: UInt32(clamping: unit.pts - unit.dts),
                    isSync: unit.isRandomAccess)
                if let (cipher, constantIV) = try ciphers?.cipher(forSegment: output.segments.count) {
                    record.subsamples = SubsampleMap.make(units, scheme: cipher.scheme)
                    record.iv = cipher.scheme == .cenc ? nextIV() : []
                    output.encryptLater(
                        DeferredEncryption(
                            cipher: cipher, range: start..<(start + record.size), subsamples: record.subsamples,
                            iv: record.iv.isEmpty ? constantIV : record.iv, kind: "video frame", pts: unit.pts))
                }
                output.appended(record: record, decodeTime: unit.dts, duration: unit.duration, presentation: unit.pts)
            } else {
                if output.track == nil {
                    output.track = try audioTrack(details[slot], planned, first: unit, timescale: output.timescale)
                }
                // A raw frame as the demuxer read it, the frames of ADTS bytes, or an AC-3 syncframe or
                // E-AC-3 access unit whole (ETSI TS 102 366 §F.2).
                let frames: [Range<Int>]
                do {
                    frames =
                        try unit.packet.map { [0..<$0.size] }
                        ?? (planned.codec.isDolby ? [0..<unit.bytes.count] : AACSampleBuilder.frames(unit.bytes))
                } catch {
                    throw PackagingError(
                        .inputCorrupt, "\(options.input): audio frame at \(Self.seconds(unit.pts)) s: \(error)")
                }
                for (index, frame) in frames.enumerated() {
                    let share = unit.duration / Int64(frames.count)
                    let time = unit.pts + share * Int64(index)
                    if let start = output.openStart,
                        time >= SegmentGrid.end(
                            segmentStart: start, origin: videoStart ?? TimestampMapper.startOffset, target: target)
                            - PackagingJob.cutTolerance
                    {
                        try output.cut(nextDecodeTime: output.ticks(time))
                    }
                    let buffer = output.sampleBuffer(reserving: frame.count)
                    let start = buffer.count
                    if let packet = unit.packet {
                        packet.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[frame])) }
                    } else {
                        unit.bytes.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[frame])) }
                    }
                    var record = FragmentSample(size: frame.count, duration: 0, isSync: true)
                    if let (cipher, constantIV) = try ciphers?.cipher(forSegment: output.segments.count) {
                        record.iv = cipher.scheme == .cenc ? nextIV() : []
                        output.encryptLater(
                            DeferredEncryption(
                                cipher: cipher, range: start..<(start + record.size), subsamples: [],
                                iv: record.iv.isEmpty ? constantIV : record.iv, kind: "audio frame", pts: time))
                    }
                    output.appended(
                        record: record, decodeTime: output.ticks(time), duration: output.ticks(share),
                        presentation: time)
                }
            }
            if let progress, let duration = reader.duration, duration > 0 {
                let fraction = min(reader.position / duration, 0.99)
                if fraction - lastReported >= 0.005 {
                    lastReported = fraction
                    progress(
                        PackagingProgress(
                            fraction: fraction, mediaSeconds: reader.position,
                            segmentsWritten: outputs.reduce(0) { $0 + $1.segments.count }))
                }
            }
        }
        for output in outputs {
            try output.cut(nextDecodeTime: nil)
            guard !output.segments.isEmpty else {
                throw PackagingError(
                    .inputCorrupt, "\(options.input): the \(output.name) stream has no decodable frame to package")
            }
            try output.writeInitSegment()
            try writePeriodInitSegments(output)
        }
        if let variantB, let video = outputOfSlot[0] {
            try variantB.cut(nextDecodeTime: nil)
            try Self.checkVariantsAlign(video, variantB)
        }
        return try publish(outputs: outputs, details: details, variantB: variantB)
    }

    /// Fails the job unless both variants have the same segments (decoding times and durations) and the
    /// same init segment, which they share.
    static func checkVariantsAlign(_ a: FragmentedOutput, _ b: FragmentedOutput) throws(PackagingError) {
        let first = a.segments.map { [$0.decodeTime, $0.ticks] }
        let second = b.segments.map { [$0.decodeTime, $0.ticks] }
        let sameInit = a.track.map(FragmentedMP4Writer.initSegment) == b.track.map(FragmentedMP4Writer.initSegment)
        guard first == second, sameInit else {
            throw PackagingError(
                .outputFailed,
                "the watermark variants do not line up: A has \(first.count) segments, B \(second.count), and their "
                    + (sameInit ? "timing differs" : "parameter sets differ"))
        }
    }

    /// A 90 kHz presentation time as seconds from the presentation's start, for messages.
    static func seconds(_ pts: Int64) -> String {
        String(cFormat: "%.3f", Double(pts - TimestampMapper.startOffset) / 90_000)
    }

    private func protection(video: Bool) -> TrackEncryption? {
        guard let scheme else { return nil }
        return TrackEncryption(
            scheme: scheme, keyID: keys.keyID, constantIV: scheme == .cbcs ? keys.iv : nil,
            cryptBlocks: scheme == .cbcs && video ? 1 : 0, skipBlocks: scheme == .cbcs && video ? 9 : 0)
    }

    private func videoTrack(builder: VideoSampleConversion, detail: StreamDetails) throws(PackagingError)
        -> FragmentedTrack
    {
        let media: FragmentedTrack.Media
        do {
            media = try builder.media(width: detail.width, height: detail.height)
        } catch {
            throw PackagingError(
                error.kind == .unsupported ? .unsupportedCodec : .inputCorrupt,
                "\(options.input): the video's parameter sets cannot be read: \(error)")
        }
        return FragmentedTrack(media: media, timescale: 90_000, encryption: protection(video: true))
    }

    private func audioConfig(_ detail: StreamDetails, _ planned: PlannedStream) throws(PackagingError)
        -> AudioSpecificConfig
    {
        guard let setup = detail.audioSetup, let config = try? AudioSpecificConfig(setup.setupData) else {
            throw PackagingError(
                .inputCorrupt, "\(options.input): audio stream \(planned.source.index) has no usable AAC configuration")
        }
        return config
    }

    /// The audio track, from the stream's AAC configuration, or for AC-3 and E-AC-3 from its `first`
    /// access unit.
    private func audioTrack(
        _ detail: StreamDetails, _ planned: PlannedStream, first: AccessUnit, timescale: UInt32
    ) throws(PackagingError) -> FragmentedTrack {
        if planned.codec.isDolby {
            let format: FragmentedTrack.DolbyFormat = planned.codec == .ac3 ? .ac3 : .eac3
            do {
                let (specific, sampleRate) = try first.bytes.withBytes { raw throws(FormatError) in
                    (
                        format == .ac3 ? try AC3SyncFrame.ac3SpecificBox(raw) : try AC3SyncFrame.ec3SpecificBox(raw),
                        try AC3SyncFrame.sampleRate(raw)
                    )
                }
                return FragmentedTrack(
                    media: .dolby(format: format, sampleRate: sampleRate, specific: specific), timescale: timescale,
                    language: planned.source.language ?? "und", encryption: protection(video: false))
            } catch {
                throw PackagingError(
                    .inputCorrupt, "\(options.input): audio stream \(planned.source.index)'s first frame: \(error)")
            }
        }
        let config = try audioConfig(detail, planned)
        return FragmentedTrack(
            media: .aac(sampleRate: config.sampleRate, channels: detail.channels, configuration: config.bytes),
            timescale: UInt32(config.sampleRate), language: planned.source.language ?? "und",
            encryption: protection(video: false))
    }

    func keyLine(iv: [UInt8]?) -> KeyLine? {
        let method =
            switch options.encryption {
            case .sampleAES: "SAMPLE-AES"
            case .cenc: "SAMPLE-AES-CTR"
            case .aes128, .none: "AES-128"
            }
        return keys.keyLine(method: method, iv: iv)
    }

    private func publish(outputs: [FragmentedOutput], details: [StreamDetails], variantB: FragmentedOutput?)
        throws(PackagingError) -> PackagingResult
    {
        let plan = reader.plan
        var playlists: [(name: String, playlist: MediaPlaylist)] = []
        for output in outputs {
            var playlist = MediaPlaylist()
            playlist.map = output.initURI
            for (index, segment) in output.segments.enumerated() {
                let key: KeyLine? =
                    switch options.encryption {
                    case .sampleAES, .cenc: try periodKeyLine(segment: index)
                    case .aes128: try keyLine(iv: segment.iv, segment: index)
                    case .none: nil
                    }
                playlist.entries.append(
                    .init(
                        duration: Double(segment.ticks) / Double(output.timescale), uri: segment.uri, byteRange: nil,
                        key: key, map: periodMap(output, segment: index)))
            }
            playlists.append((output.name + ".m3u8", playlist))
        }
        let targetDuration = max(1, playlists.map(\.playlist.longestRoundedDuration).max() ?? 1)
        for (name, playlist) in playlists { try write(playlist.render(targetDuration: targetDuration), to: name) }

        let streams = plan.streams
        let hasVideo = plan.video != nil
        let renditions = outputs.filter { $0.name.hasPrefix("audio-") }
        var master = MasterPlaylist()
        master.audioRenditions = PackagingSummary.audioRenditions(
            renditions.map { ($0.slot, $0.name + ".m3u8") }, streams: streams, details: details)
        let audioCodecs = Array(Set(renditions.map { details[$0.slot].codecString })).sorted()
        let renditionRates = renditions.map { Self.rates($0) }
        let main = outputs[0]
        let mainRates = hasVideo || renditions.isEmpty ? Self.rates(main) : (peak: 0, average: 0)
        let videoDetail = hasVideo ? details[0] : nil
        master.variants.append(
            .init(
                bandwidth: mainRates.peak + (renditionRates.map(\.peak).max() ?? 0),
                averageBandwidth: mainRates.average + (renditionRates.map(\.average).max() ?? 0),
                codecs: (hasVideo || renditions.isEmpty ? [details[main.slot].codecString] : []) + audioCodecs,
                resolution: videoDetail.map { ($0.width, $0.height) },
                frameRate: videoDetail.flatMap { $0.frameRate > 0 ? $0.frameRate : nil },
                audioGroup: renditions.isEmpty ? nil : "audio",
                uri: (hasVideo || renditions.isEmpty ? main : renditions[0]).name + ".m3u8"))
        try write(master.render(), to: "master.m3u8")
        let duration = outputs.map { Double($0.segments.reduce(0) { $0 + $1.ticks }) / Double($0.timescale) }.max() ?? 0
        let dash = try dashManifest(outputs: outputs, details: details, duration: duration)
        if let text = dash.text { try write(text, to: "manifest.mpd") }
        if let key = options.watermarkKey, variantB != nil {
            let manifest = WatermarkManifest(
                key: key, blockSize: WatermarkPattern.blockSize, playlists: [outputs[0].name + ".m3u8"],
                segmentDuration: options.segmentDuration)
            try write(manifest.rendered(), to: WatermarkManifest.fileName)
        }

        let packaged = PackagingSummary.packagedStreams(
            streams, details: details, playlist: { slot in outputs.first { $0.slot == slot }!.name + ".m3u8" },
            accessUnits: { slot in outputs.first { $0.slot == slot }!.sampleCount })
        let encrypted = options.encryption != .none
        return PackagingResult(
            outputDirectory: directory.path, masterPlaylist: directory.path + "/master.m3u8",
            mediaPlaylists: playlists.map(\.name), keyFile: encrypted ? keys.keyFile : nil, keyID: keys.keyID,
            key: encrypted ? keys.key : nil, iv: encrypted && options.encryption != .cenc ? keys.iv : nil,
            keyURI: keys.uri, encryption: options.encryption, streams: packaged,
            segmentCount: outputs.reduce(0) { $0 + $1.segments.count }, duration: duration,
            bytesWritten: (outputs + (variantB.map { [$0] } ?? [])).reduce(0) {
                $0 + $1.segments.reduce(0) { $0 + $1.bytes }
            }, notices: dash.notices)
    }

    /// Peak and average bit rates of a track's segments.
    static func rates(_ output: FragmentedOutput) -> (peak: Int, average: Int) {
        PackagingSummary.rates(output.segments.map { ($0.bytes, Double($0.ticks) / Double(output.timescale)) })
    }

    func write(_ text: String, to name: String) throws(PackagingError) {
        let file = try SegmentFile(path: directory.temporary + "/" + name, aes128: nil, writer: writer)
        file.buffer.append(Array(text.utf8))
        try file.close()
    }
}
