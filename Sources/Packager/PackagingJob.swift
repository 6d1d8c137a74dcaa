import Crypto
import FoundationEssentials
import Glibc
import MediaFormats
import SystemSupport

/// A packaging job: one input packaged as encrypted HLS in MPEG-TS, published atomically.
///
/// `run` blocks while it demuxes and writes, so call it from a thread you own, not from the cooperative
/// pool. It reports progress as a fraction, checks `cancellation` between access units, and on any
/// failure or cancellation removes everything it wrote, leaving the previous output untouched.
///
/// ```swift
/// var options = PackagingOptions(input: "media/clip.mp4", output: "out/clip")
/// options.keyFile = PackagingOptions.defaultKeyFile(for: options.output)
/// let result = try PackagingJob(options: options).run(progress: { print($0.fraction) })
/// ```
public struct PackagingJob: Sendable {
    /// How far short of a segment's target duration (90 kHz) a cut may still fall, in both containers
    /// and the watermark's variants: timestamps rescaled from other time bases can land a tick short.
    static let cutTolerance: Int64 = 100

    /// What to package and how.
    public let options: PackagingOptions

    /// A job for `options`.
    public init(options: PackagingOptions) { self.options = options }

    /// Packages the input and publishes the output; returns what was written.
    ///
    /// `progress` and `notice` are called on the calling thread; progress comes at least every 0.5 % of
    /// the input's duration when the container declares one, and always once at 1 when published.
    public func run(
        progress: (@Sendable (PackagingProgress) -> Void)? = nil, notice: (@Sendable (String) -> Void)? = nil,
        cancellation: PackagingCancellation? = nil
    ) throws(PackagingError) -> PackagingResult {
        try validate()
        try checkPathsApart()
        let output = OutputDirectory.absolutePath(options.output)
        try KeyMaterial.check(options: options, output: output)
        let rate = Double(options.flicker == nil ? StillImageProducer.frameRate : StillFlicker.frameRate)
        let stillFrames = max(1, Int((options.stillDuration * rate).rounded()))
        // A GOP no longer than the video, so the verifier can tell it from the I-frame playlist.
        let stillGOP = min(stillFrames, max(1, Int((options.segmentDuration * rate).rounded())))
        let pattern = try watermarkPattern()
        let reader = try SourceReader(
            path: options.input, stillFrames: stillFrames, stillGOP: stillGOP, maxPixels: options.maxPixels,
            flicker: options.flicker, watermark: pattern.map { ($0, self.options.segmentDuration) },
            cmafSamples: { plan in
                (try? Self.container(for: plan, options: self.options))?.0.container == .fragmentedMP4
            })
        // Drawn only now that the input is open (see `KeyMaterial.check`).
        let keys = try KeyMaterial(options: options, output: output)
        var keyed = self.options
        keyed.watermarkKey = pattern?.key
        let (options, containerNotices) = try Self.container(for: reader.plan, options: keyed)
        try Self.checkFMP4Options(options)
        for text in containerNotices { notice?(text) }
        var notices: [String] = []
        for text in reader.notices {
            notices.append(text)
            notice?(text)
        }
        if cancellation?.isCancelled == true { throw PackagingError(.cancelled, "packaging was cancelled") }
        let directory = try OutputDirectory.prepare(options.output, force: options.force)
        let writer = BackgroundWriter(
            bufferCount: options.container == .fragmentedMP4
                ? BackgroundWriter.fragmentedBuffers : BackgroundWriter.transportStreamBuffers)
        var stagedKey: String? = nil
        do throws(PackagingError) {
            var result: PackagingResult
            if options.container == .fragmentedMP4 {
                var run = FragmentedPackagingRun(
                    options: options, reader: reader, directory: directory, writer: writer, keys: keys,
                    progress: progress, cancellation: cancellation)
                result = try run.execute()
            } else {
                var run = PackagingRun(
                    options: options, reader: reader, directory: directory, writer: writer, keys: keys,
                    progress: progress, cancellation: cancellation)
                result = try run.execute()
            }
            try writer.drain()
            for text in reader.notices.dropFirst(notices.count) {
                notices.append(text)
                notice?(text)
            }
            // The run's own notices (an MPD not written, say) come after the reader's.
            for text in result.notices { notice?(text) }
            result.notices = containerNotices + notices + result.notices
            result.container = options.container
            result.keyPeriod = options.keyPeriod
            if options.encryption != .none {
                result.periodKeys = keys.ring.keys.map { PeriodKeyPair(keyID: $0.keyID, key: $0.key) }
            }
            stagedKey = try keys.stageKeyFile()
            if cancellation?.isCancelled == true { throw PackagingError(.cancelled, "packaging was cancelled") }
            // The last checks before anything is replaced: the key file is still no link and no file of
            // someone else's, and the output still one of ours. rename(2) replaces the name itself and
            // never follows a link there.
            try directory.checkStillReplaceable()
            if let stagedKey, let keyFile = keys.keyFile {
                try keys.checkKeyFile(force: options.force)
                guard rename(stagedKey, keyFile) == 0 else {
                    throw SegmentFile.failure("publish the key file", keyFile)
                }
            }
            try directory.commit()
            progress?(
                PackagingProgress(fraction: 1, mediaSeconds: result.duration, segmentsWritten: result.segmentCount))
            return result
        } catch {
            try? writer.drain()
            directory.discard()
            if let stagedKey { unlink(stagedKey) }
            throw error
        }
    }

    /// The options with the container HEVC needs: fMP4 when none was asked for (and a notice saying
    /// so); with `--container ts`, the refusal and its hint.
    static func container(for plan: StreamPlan, options: PackagingOptions) throws(PackagingError) -> (
        PackagingOptions, [String]
    ) {
        guard plan.video?.codec == .hevc, options.container == .transportStream else { return (options, []) }
        guard options.containerIsDefault else {
            throw PackagingError(
                .containerUnsupported,
                "the video is HEVC (H.265), which SAMPLE-AES in MPEG-TS does not define (Apple's HLS carries HEVC "
                    + "in fMP4 only): use --container fmp4 (CENC cbcs), or leave --container out")
        }
        guard options.audioFormat != .packed else {
            throw PackagingError(
                .invalidOptions, "the video is HEVC, which is packaged as fMP4, and packed audio is a TS-path format")
        }
        var chosen = options
        chosen.container = .fragmentedMP4
        return (chosen, ["the video is HEVC: packaging it as fMP4 (CMAF, --container fmp4), as HLS carries HEVC"])
    }

    /// Refuses what only fMP4 carries (CENC `cenc`, a DASH license URL) for a TS output.
    static func checkFMP4Options(_ options: PackagingOptions) throws(PackagingError) {
        guard options.container != .fragmentedMP4 else { return }
        if options.encryption == .cenc {
            throw PackagingError(.invalidOptions, "cenc encryption needs --container fmp4: MPEG-TS has no CENC")
        }
        if options.licenseURL != nil {
            throw PackagingError(
                .invalidOptions, "--license-url names a license in the DASH manifest: it needs --container fmp4")
        }
    }

    /// The watermark pattern under `--watermark-key`, or a key from OpenSSL's RNG; nil without
    /// `--watermark`.
    private func watermarkPattern() throws(PackagingError) -> WatermarkPattern? {
        guard options.watermark != nil else { return nil }
        if let key = options.watermarkKey { return try WatermarkPattern(key: key) }
        do {
            return try WatermarkPattern(key: SecureRandom.bytes(16))
        } catch {
            throw PackagingError(.outputFailed, "cannot draw a watermark key: \(error)")
        }
    }

    private func validate() throws(PackagingError) {
        guard options.segmentDuration.isFinite, options.segmentDuration >= 1, options.segmentDuration <= 60 else {
            throw PackagingError(.invalidOptions, "the segment duration must be between 1 and 60 seconds")
        }
        guard options.stillDuration.isFinite, options.stillDuration >= 1, options.stillDuration <= 3_600 else {
            throw PackagingError(.invalidOptions, "the still duration must be between 1 and 3600 seconds")
        }
        if let period = options.keyPeriod {
            guard (1...KeyRing.periodLimit).contains(period) else {
                throw PackagingError(
                    .invalidOptions,
                    "the key period must be a whole number of segments from 1 to \(KeyRing.periodLimit), got \(period)")
            }
            guard options.encryption != .none else {
                throw PackagingError(.invalidOptions, "--key-period rotates keys: it needs encryption, not 'none'")
            }
        }
        if options.keyFormat == .fairplay && options.encryption != .sampleAES {
            throw PackagingError(.invalidOptions, "FairPlay keys need SAMPLE-AES encryption")
        }
        // Without --container the input decides (HEVC gets fMP4): checked again once it is known.
        if !options.containerIsDefault { try Self.checkFMP4Options(options) }
        if let url = options.licenseURL {
            guard url.hasPrefix("https://") || url.hasPrefix("http://"),
                !url.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F })
            else {
                throw PackagingError(
                    .invalidOptions, "the license URL must be an http(s) URL without spaces or control characters")
            }
        }
        if options.watermarkKey != nil && options.watermark == nil {
            throw PackagingError(.invalidOptions, "--watermark-key is the key of --watermark ab: give both, or neither")
        }
        if options.watermark != nil && options.flicker != nil {
            throw PackagingError(
                .invalidOptions, "--watermark ab marks segments of a video, and --flicker makes one of a still image")
        }
        if options.container == .fragmentedMP4 && options.audioFormat == .packed {
            throw PackagingError(
                .invalidOptions, "packed audio is a TS-path format: fMP4 puts every audio stream in a track of its own")
        }
    }
}

/// The state of one job while it runs: the outputs, the rendition schedulers, the cut decisions.
private struct PackagingRun {
    let options: PackagingOptions
    let reader: SourceReader
    let directory: OutputDirectory
    let writer: BackgroundWriter
    let keys: KeyMaterial
    let progress: (@Sendable (PackagingProgress) -> Void)?
    let cancellation: PackagingCancellation?

    init(
        options: PackagingOptions, reader: SourceReader, directory: OutputDirectory, writer: BackgroundWriter,
        keys: KeyMaterial, progress: (@Sendable (PackagingProgress) -> Void)?, cancellation: PackagingCancellation?
    ) {
        self.options = options
        self.reader = reader
        self.directory = directory
        self.writer = writer
        self.keys = keys
        self.progress = progress
        self.cancellation = cancellation
    }

    mutating func execute() throws(PackagingError) -> PackagingResult {
        let plan = reader.plan
        let details = reader.details
        let protection: SegmentedOutput.Protection =
            switch options.encryption {
            case .sampleAES: .sampleAES(key: keys.key, iv: keys.iv)
            case .aes128: .aes128(key: keys.key, iv: keys.iv)
            case .none, .cenc: .none  // cenc is refused for TS by checkFMP4Options
            }
        let streams = plan.streams
        func track(_ slot: Int) throws(PackagingError) -> SegmentedOutput.Track {
            let planned = streams[slot]
            var descriptors: [UInt8] = []
            if options.encryption == .sampleAES {
                descriptors += TransportStreamDescriptor.privateDataIndicator(planned.codec.privateDataIndicator)
                if let setup = details[slot].audioSetup {
                    do {
                        descriptors += try TransportStreamDescriptor.registration("apad", setup.serialized())
                    } catch {
                        throw PackagingError(
                            .inputCorrupt,
                            "\(options.input): audio stream \(planned.source.index) cannot be signalled for "
                                + "SAMPLE-AES: \(error)")
                    }
                }
            }
            if planned.codec.isAudio, let code = planned.source.language, code.count == 3, code != "und" {
                descriptors += TransportStreamDescriptor.language(code)
            }
            return SegmentedOutput.Track(
                slot: slot, codec: planned.codec, pid: OutputLayout.pid(for: planned.codec),
                streamID: planned.codec.pesStreamID, descriptors: descriptors)
        }
        func makeOutput(_ name: String, _ slots: [Int]) throws(PackagingError) -> SegmentedOutput {
            var tracks: [SegmentedOutput.Track] = []
            for slot in slots { tracks.append(try track(slot)) }
            return try SegmentedOutput(
                name: name, tracks: tracks, directory: directory.temporary, writer: writer,
                protection: protection,
                packedAudio: options.audioFormat == .packed && slots.allSatisfy { streams[$0].codec.isAudio },
                audioSetup: slots.count == 1 ? details[slots[0]].audioSetup : nil)
        }

        // Layout: video muxed with a single audio stream; several audio streams become renditions.
        let hasVideo = plan.video != nil
        let target = Int64((options.segmentDuration * 90_000).rounded())
        var outputs: [SegmentedOutput] = []
        var outputOfSlot: [Int: Int] = [:]
        var renditions: [Int: RenditionScheduler] = [:]
        // With --watermark the audio is a rendition of its own, so that one copy serves both variants.
        let layout = OutputLayout(
            hasVideo: hasVideo, audioCount: plan.audio.count,
            separateAudio: options.audioFormat == .packed || options.watermark != nil)
        var variantB: SegmentedOutput? = nil
        for playlist in layout.playlists {
            let output = try makeOutput(playlist.name, playlist.slots)
            output.ring = keys.ring
            if options.watermark != nil && playlist.slots == [0] && hasVideo {
                output.variant = .a
                let other = try makeOutput(playlist.name, playlist.slots)
                other.ring = keys.ring
                other.variant = .b
                variantB = other
            }
            outputs.append(output)
            for slot in playlist.slots { outputOfSlot[slot] = outputs.count - 1 }
            if playlist.isRendition && hasVideo {
                renditions[playlist.slots[0]] = RenditionScheduler(
                    output: output, slot: playlist.slots[0], target: target)
            }
        }

        do throws(PackagingError) {
            var lastReported = -1.0
            while case (let slot, var unit)? = try reader.next() {
                if cancellation?.isCancelled == true { throw PackagingError(.cancelled, "packaging was cancelled") }
                let output = outputs[outputOfSlot[slot]!]
                if slot == 0 && hasVideo {
                    // Variant B's segments are cut by the same rule at the same (forced) IDR pictures.
                    let video = unit.variant == .b ? variantB! : output
                    if unit.isRandomAccess, let start = video.openSegmentStart,
                        unit.pts - start >= target - PackagingJob.cutTolerance
                    {
                        try video.cut(at: unit.pts)
                        if video === output {
                            for key in renditions.keys.sorted() { try renditions[key]!.announce(cut: unit.pts) }
                        }
                    }
                    try video.write(&unit, slot: slot)
                } else if renditions[slot] != nil {
                    try renditions[slot]!.add(unit)
                } else {
                    // Audio without video: on the grid from the presentation's start, as in fMP4.
                    if !hasVideo, let start = output.openSegmentStart,
                        unit.pts >= SegmentGrid.end(
                            segmentStart: start, origin: TimestampMapper.startOffset, target: target)
                            - PackagingJob.cutTolerance
                    {
                        try output.cut(at: unit.pts)
                    }
                    try output.write(&unit, slot: slot)
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
            for key in renditions.keys.sorted() { try renditions[key]!.flush() }
            for output in outputs { try output.finish() }
            try variantB?.finish()
        } catch {
            for output in outputs { output.abandon() }
            variantB?.abandon()
            throw error
        }
        if let variantB { try Self.checkVariantsAlign(outputs[0], variantB) }
        return try publishPlaylists(outputs: outputs, details: details, variantB: variantB)
    }

    /// The key line before segment `index` of a playlist: at the start of each key period under SAMPLE-AES
    /// (with the period's IV), before every segment under AES-128 (with `segmentIV`).
    private func keyLine(segment index: Int, segmentIV: [UInt8]?) throws(PackagingError) -> KeyLine? {
        let method = options.encryption == .sampleAES ? "SAMPLE-AES" : "AES-128"
        switch options.encryption {
        case .sampleAES:
            guard keys.ring.startsPeriod(index) else { return nil }
            let period = keys.ring.period(ofSegment: index)
            return try keys.keyLine(method: method, iv: keys.ring.key(period: period).iv, period: period)
        case .aes128: return try keys.keyLine(method: method, iv: segmentIV, period: keys.ring.period(ofSegment: index))
        case .none, .cenc: return nil
        }
    }

    /// Fails the job unless both variants have the same segments, starts and ends: what the gateway's
    /// mixing of variants relies on.
    static func checkVariantsAlign(_ a: SegmentedOutput, _ b: SegmentedOutput) throws(PackagingError) {
        let first = a.segments.map { [$0.start, $0.end] }
        let second = b.segments.map { [$0.start, $0.end] }
        guard first == second else {
            throw PackagingError(
                .outputFailed,
                "the watermark variants do not line up: A has \(first.count) segments, B \(second.count), and their "
                    + "start and end times differ")
        }
    }

    private func publishPlaylists(
        outputs: [SegmentedOutput], details: [StreamDetails], variantB: SegmentedOutput?
    ) throws(PackagingError) -> PackagingResult {
        let plan = reader.plan
        var playlists: [(name: String, playlist: MediaPlaylist)] = []
        for output in outputs {
            guard !output.segments.isEmpty else {
                throw PackagingError(
                    .inputCorrupt, "\(options.input): the \(output.name) stream has no decodable frame to package")
            }
            var playlist = MediaPlaylist()
            for (index, (segment, duration)) in zip(output.segments, output.durations).enumerated() {
                let key = try keyLine(segment: index, segmentIV: segment.iv)
                playlist.entries.append(.init(duration: duration, uri: segment.uri, byteRange: nil, key: key))
            }
            playlists.append((output.name + ".m3u8", playlist))
        }
        var iFramePlaylist: MediaPlaylist? = nil
        // With --watermark no I-frame playlist: its byte ranges would name one variant's IDR pictures.
        if let video = outputs.first, plan.video != nil, options.encryption != .aes128, variantB == nil {
            var playlist = MediaPlaylist()
            playlist.iFramesOnly = true
            let segmentIndex = Dictionary(video.segments.enumerated().map { ($1.uri, $0) }) { first, _ in first }
            var lastPeriod = -1
            for (frame, duration) in zip(video.iFrames, video.iFrameDurations) {
                // Each key period's first I-frame names the period's key, as the media playlist does.
                let period = keys.ring.period(ofSegment: segmentIndex[frame.uri] ?? 0)
                var key: KeyLine? = nil
                if options.encryption == .sampleAES && period != lastPeriod {
                    key = try keys.keyLine(method: "SAMPLE-AES", iv: keys.ring.key(period: period).iv, period: period)
                    lastPeriod = period
                }
                playlist.entries.append(
                    .init(duration: duration, uri: frame.uri, byteRange: (frame.length, frame.offset), key: key))
            }
            iFramePlaylist = playlist
        }
        let allPlaylists = playlists.map(\.playlist) + (iFramePlaylist.map { [$0] } ?? [])
        let targetDuration = max(1, allPlaylists.map(\.longestRoundedDuration).max() ?? 1)
        for (name, playlist) in playlists {
            try write(playlist.render(targetDuration: targetDuration), to: name)
        }
        if let iFramePlaylist { try write(iFramePlaylist.render(targetDuration: targetDuration), to: "iframes.m3u8") }

        // The master playlist.
        var master = MasterPlaylist()
        let streams = plan.streams
        let hasVideo = plan.video != nil
        let renditionOutputs = outputs.filter { $0.name.hasPrefix("audio-") }
        master.audioRenditions = PackagingSummary.audioRenditions(
            renditionOutputs.map { ($0.tracks[0].slot, $0.name + ".m3u8") }, streams: streams, details: details)
        func rates(_ output: SegmentedOutput) -> (peak: Int, average: Int) {
            PackagingSummary.rates(zip(output.segments, output.durations).map { ($0.bytes, $1) })
        }
        let audioCodecs = Array(Set(renditionOutputs.map { details[$0.tracks[0].slot].codecString })).sorted()
        let renditionRates = renditionOutputs.map(rates)
        let main = outputs[0]
        if hasVideo || renditionOutputs.isEmpty {
            let mainRates = rates(main)
            let codecs = main.tracks.map { details[$0.slot].codecString } + audioCodecs
            let videoDetail = hasVideo ? details[0] : nil
            master.variants.append(
                .init(
                    bandwidth: mainRates.peak + (renditionRates.map(\.peak).max() ?? 0),
                    averageBandwidth: mainRates.average + (renditionRates.map(\.average).max() ?? 0),
                    codecs: codecs, resolution: videoDetail.map { ($0.width, $0.height) },
                    frameRate: videoDetail.flatMap { $0.frameRate > 0 ? $0.frameRate : nil },
                    audioGroup: renditionOutputs.isEmpty ? nil : "audio", uri: main.name + ".m3u8"))
        } else {
            master.variants.append(
                .init(
                    bandwidth: renditionRates.map(\.peak).max() ?? 0,
                    averageBandwidth: renditionRates.map(\.average).max() ?? 0, codecs: audioCodecs,
                    resolution: nil, frameRate: nil, audioGroup: "audio", uri: renditionOutputs[0].name + ".m3u8"))
        }
        if let iFramePlaylist, let videoDetail = hasVideo ? details[0] : nil {
            var peak = 0.0
            var bits = 0.0
            var seconds = 0.0
            for entry in iFramePlaylist.entries {
                let entryBits = Double((entry.byteRange?.length ?? 0) * 8)
                bits += entryBits
                seconds += entry.duration
                if entry.duration > 0 { peak = max(peak, entryBits / entry.duration) }
            }
            master.iFrameVariants.append(
                .init(
                    bandwidth: Int(peak.rounded(.up)),
                    averageBandwidth: Int((seconds > 0 ? bits / seconds : peak).rounded(.up)),
                    codecs: [videoDetail.codecString], resolution: (videoDetail.width, videoDetail.height),
                    uri: "iframes.m3u8"))
        }
        try write(master.render(), to: "master.m3u8")
        if let key = options.watermarkKey, variantB != nil {
            let manifest = WatermarkManifest(
                key: key, blockSize: WatermarkPattern.blockSize, playlists: [outputs[0].name + ".m3u8"],
                segmentDuration: options.segmentDuration)
            try write(manifest.rendered(), to: WatermarkManifest.fileName)
        }

        // The result.
        let packaged = PackagingSummary.packagedStreams(
            streams, details: details,
            playlist: { slot in outputs.first { $0.tracks.contains { $0.slot == slot } }!.name + ".m3u8" },
            accessUnits: { slot in outputs.first { $0.tracks.contains { $0.slot == slot } }!.accessUnitCounts[slot] ?? 0
            })
        let start = outputs.compactMap { $0.segments.first?.start }.min() ?? 0
        let end = outputs.map(\.end).max() ?? start
        return PackagingResult(
            outputDirectory: directory.path, masterPlaylist: directory.path + "/master.m3u8",
            mediaPlaylists: playlists.map(\.name) + (iFramePlaylist == nil ? [] : ["iframes.m3u8"]),
            keyFile: options.encryption == .none ? nil : keys.keyFile, keyID: keys.keyID,
            key: options.encryption == .none ? nil : keys.key, iv: options.encryption == .none ? nil : keys.iv,
            keyURI: keys.uri, encryption: options.encryption, streams: packaged,
            segmentCount: outputs.reduce(0) { $0 + $1.segments.count }, duration: Double(end - start) / 90_000,
            bytesWritten: (outputs + (variantB.map { [$0] } ?? [])).reduce(0) {
                $0 + $1.segments.reduce(0) { $0 + $1.bytes }
            },
            notices: [])
    }

    private func write(_ text: String, to name: String) throws(PackagingError) {
        let file = try SegmentFile(path: directory.temporary + "/" + name, aes128: nil, writer: writer)
        file.buffer.append(Array(text.utf8))
        try file.close()
    }
}

/// Holds an audio rendition's frames until the video decides where its next segment starts, so that
/// rendition segments start when the video's do.
private struct RenditionScheduler {
    /// How far past the target duration frames are held before they are written anyway (90 kHz), so a
    /// video without key frames cannot make the rendition buffer grow without bound.
    static let holdLimit: Int64 = 30 * 90_000

    let output: SegmentedOutput
    let slot: Int
    let target: Int64
    private var held: [AccessUnit] = []
    private var cuts: [Int64] = []

    init(output: SegmentedOutput, slot: Int, target: Int64) {
        self.output = output
        self.slot = slot
        self.target = target
    }

    mutating func add(_ unit: AccessUnit) throws(PackagingError) {
        held.append(unit)
        try drain(final: false)
    }

    mutating func announce(cut time: Int64) throws(PackagingError) {
        cuts.append(time)
        try drain(final: false)
    }

    mutating func flush() throws(PackagingError) { try drain(final: true) }

    private mutating func drain(final: Bool) throws(PackagingError) {
        var written = 0
        while written < held.count {
            let unit = held[written]
            if let cut = cuts.first, unit.pts >= cut {
                try output.cut(at: cut)
                cuts.removeFirst()
                continue
            }
            if !final, cuts.isEmpty, let start = output.openSegmentStart {
                let elapsed = unit.pts - start
                if elapsed >= target - PackagingJob.cutTolerance && elapsed < target + RenditionScheduler.holdLimit {
                    break  // the video has not decided yet whether a segment starts before this frame
                }
            }
            try output.write(&held[written], slot: slot)
            written += 1
        }
        held.removeFirst(written)
    }
}

extension PackagingJob {
    /// Removes the temporary files this process made for `options` (the output being built and a staged
    /// key file): the last resort of a signal handler when a job blocked in I/O cannot stop by itself.
    public static func removeTemporaryFiles(for options: PackagingOptions) {
        var paths = [OutputDirectory.absolutePath(options.output)]
        if let keyFile = options.keyFile { paths.append(OutputDirectory.absolutePath(keyFile)) }
        for path in paths {
            let name = path.lastPathComponent
            let parent = path.deletingLastPathComponent
            let prefix = ".\(name)\(OutputDirectory.marker)\(getpid())-"
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
            where entry.hasPrefix(prefix) && entry.hasSuffix(OutputDirectory.suffix) {
                try? FileManager.default.removeItem(atPath: parent + "/" + entry)
            }
        }
    }
}
