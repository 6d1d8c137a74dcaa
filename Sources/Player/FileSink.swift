import FoundationEssentials
import Glibc
import MediaCore
import SystemSupport

/// Writes what a capture would record (muted audio, masked video) to a file, encoded with libavcodec.
///
/// The container follows the extension. Audio is written as `pcm_f32le` in `.wav` and `.mkv` (so unmuted
/// samples are bit-identical to a float decode), 24-bit FLAC in `.flac` (exact for 16- and 24-bit
/// sources), AAC in `.m4a` and `.mp4`; video as
/// lossless FFV1 in `.mkv` (so unmasked frames decode bit-identical) and H.264 (libx264) in `.mp4`. The
/// file is written beside the target under a temporary name and renamed into place by `finish()`.
final class FileSink: @unchecked Sendable {
    // Invariant: every member below is used only with `lock` held, because in realtime the audio
    // (emulated device) and video (presenter) threads both write.
    private let lock = ConditionLock()
    private let output: OutputContext
    private var audio: (encoder: Encoder, stream: Int, resampler: Resampler?, written: Int64)?
    private var video: (encoder: Encoder, stream: Int, scaler: Scaler?)?
    private var lastVideoPTS = Int64.min
    private let audioFormat: AudioFormat?
    private let temporaryPath: String
    /// The final path.
    let path: String

    /// Extensions and the codecs used for them: (audio, video); nil video means audio only.
    static let codecs: [String: (audio: String, video: String?)] = [
        "wav": ("pcm_f32le", nil), "flac": ("flac", nil), "m4a": ("aac", nil), "mkv": ("pcm_f32le", "ffv1"),
        "mp4": ("aac", "libx264"), "mov": ("aac", "libx264"),
    ]

    /// Prepares `path` for `audio` (the sink's float format) and `video` (the source stream), whichever
    /// the container takes.
    init(path: String, audio audioFormat: AudioFormat?, video: StreamInfo?) throws(PlayerError) {
        self.path = path
        let url = URL(fileURLWithPath: path)
        let ext = url.pathExtension.lowercased()
        guard let codecs = Self.codecs[ext] else {
            throw PlayerError(
                .output, "cannot write '\(path)': unknown extension; use .wav, .flac, .m4a, .mkv, .mp4 or .mov")
        }
        let wantsVideo = codecs.video != nil && video != nil
        guard audioFormat != nil || wantsVideo else {
            throw PlayerError(.output, "cannot write '\(path)': the input has nothing a .\(ext) file can hold")
        }
        temporaryPath = Self.partialPath(for: path)
        self.audioFormat = audioFormat
        do {
            output = try OutputContext(path: temporaryPath, namedLike: path)
            if let audioFormat {
                // FLAC's first sample format is s16, which would cut a 24-bit source to 16 bits; with s32 it
                // encodes 24 bits, which hold a 16- or 24-bit source exactly.
                let sampleFormat: SampleFormat? =
                    switch codecs.audio {
                    case "pcm_f32le": .float
                    case "flac": .s32
                    default: nil
                    }
                var settings = EncoderSettings(
                    codecName: codecs.audio,
                    media: .audio(
                        sampleRate: audioFormat.sampleRate, channelCount: audioFormat.channelCount,
                        sampleFormat: sampleFormat))
                settings.globalHeader = output.needsGlobalHeader
                if codecs.audio == "aac" { settings.bitRate = 192_000 }
                let encoder = try Encoder(settings: settings)
                let stream = try output.addStream(for: encoder)
                let resampler = encoder.audioFormat == audioFormat ? nil : Resampler(output: encoder.audioFormat)
                audio = (encoder, stream, resampler, 0)
            }
            if let codec = codecs.video, let video {
                let source = PixelFormat(name: video.pixelFormatName) ?? .yuv420p
                let pixelFormat: PixelFormat = codec == "ffv1" && source.isPlanarYUV8 ? source : .yuv420p
                var settings = EncoderSettings(
                    codecName: codec,
                    media: .video(
                        width: video.width, height: video.height, pixelFormat: pixelFormat,
                        frameRate: video.frameRate))
                settings.timeBase = video.timeBase
                settings.globalHeader = output.needsGlobalHeader
                if codec == "libx264" { settings.options = ["preset": "veryfast", "crf": "18"] }
                let encoder = try Encoder(settings: settings)
                let stream = try output.addStream(for: encoder)
                self.video = (encoder, stream, nil)
            }
            try output.open()
        } catch {
            try? FileManager.default.removeItem(atPath: temporaryPath)
            throw PlayerError(.output, "cannot write '\(path)': \(error)")
        }
    }

    /// True when the file holds a video stream.
    var hasVideo: Bool { lock.withLock { video != nil } }

    /// Encodes `frames` interleaved float sample frames, continuing the audio timeline.
    func writeAudio(_ samples: UnsafeBufferPointer<Float>) throws(PlayerError) {
        guard let audioFormat, !samples.isEmpty else { return }
        do {
            try lock.withLock {
                guard var state = audio else { return }
                let frames = samples.count / audioFormat.channelCount
                let frame = try Frame(sampleCount: frames, format: audioFormat)
                frame.withUnsafeMutableAudioPlanes { planes in
                    UnsafeMutableRawPointer(planes[0].base).copyMemory(
                        from: samples.baseAddress!, byteCount: samples.count * MemoryLayout<Float>.size)
                }
                let converted = try state.resampler?.convert(frame) ?? frame
                converted.pts = state.written
                state.written += Int64(converted.sampleCount)
                audio = state
                try state.encoder.encode(converted) { packet in
                    try output.write(packet, stream: state.stream, from: state.encoder.timeBase)
                }
            }
        } catch {
            throw PlayerError(.output, "writing audio to '\(path)': \(error)")
        }
    }

    /// Encodes a video frame shown at `outputTime` seconds from the start of the output.
    func writeVideo(_ frame: Frame, outputTime: Double) throws(PlayerError) {
        do {
            try lock.withLock {
                guard var state = video else { return }
                let pts = Int64(roundingAndClamping: outputTime / state.encoder.timeBase.doubleValue)
                // Damaged input can yield a picture that goes back in time; a file cannot hold it.
                guard pts > lastVideoPTS else { return }
                lastVideoPTS = pts
                var picture = frame
                if frame.pixelFormat != state.encoder.pixelFormat || frame.width != state.encoder.width
                    || frame.height != state.encoder.height
                {
                    if state.scaler == nil {
                        state.scaler = Scaler(
                            width: state.encoder.width, height: state.encoder.height,
                            pixelFormat: state.encoder.pixelFormat)
                        video = state
                    }
                    picture = try state.scaler!.scale(frame)
                }
                picture.pts = pts
                try state.encoder.encode(picture) { packet in
                    try output.write(packet, stream: state.stream, from: state.encoder.timeBase)
                }
            }
        } catch {
            throw PlayerError(.output, "writing video to '\(path)': \(error)")
        }
    }

    /// Drains the encoders, writes the trailer and renames the file into place.
    func finish() throws(PlayerError) {
        do {
            try lock.withLock {
                if let state = audio {
                    if let resampler = state.resampler, let rest = try resampler.drain() {
                        rest.pts = state.written
                        try state.encoder.encode(rest) {
                            try output.write($0, stream: state.stream, from: state.encoder.timeBase)
                        }
                    }
                    try state.encoder.encode(nil) {
                        try output.write($0, stream: state.stream, from: state.encoder.timeBase)
                    }
                }
                if let state = video {
                    try state.encoder.encode(nil) {
                        try output.write($0, stream: state.stream, from: state.encoder.timeBase)
                    }
                }
                try output.finish()
            }
            try FileManager.default.moveItemReplacing(from: temporaryPath, to: path)
        } catch {
            abandon()
            throw PlayerError(.output, "finishing '\(path)': \(error)")
        }
    }

    /// Deletes the temporary file; the target is left as it was.
    func abandon() {
        try? FileManager.default.removeItem(atPath: temporaryPath)
    }

    /// Where this process writes `path` before renaming it into place: a hidden sibling named after it
    /// and the process, with the same extension so FFmpeg picks the same container.
    static func partialPath(for path: String) -> String {
        let url = URL(fileURLWithPath: path)
        return
            "\(url.deletingLastPathComponent().path)/.\(url.lastPathComponent).partial-\(getpid()).\(url.pathExtension)"
    }
}

extension FileManager {
    /// Renames `from` to `to`, replacing `to` atomically when it exists (`rename(2)`).
    func moveItemReplacing(from: String, to: String) throws {
        guard rename(from, to) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: ["NSFilePath": to, "errno": errno])
        }
    }
}
