import Foundation
import MediaCore

/// Every audio sample of a file's best audio stream, converted to interleaved float at its own rate and
/// channel count by libswresample — a plain decode, the reference the player's output is compared to.
struct DecodedAudio {
    let sampleRate: Int
    let channels: Int
    let samples: [Float]
    /// Media time of the first sample (stream start relative to the container start).
    let start: Double

    var frameCount: Int { samples.count / channels }

    /// The sample of `channel` at frame `frame`.
    subscript(frame: Int, channel: Int) -> Float { samples[frame * channels + channel] }
}

/// One decoded picture, planes copied without padding.
struct DecodedPicture {
    let time: Double
    let width: Int
    let height: Int
    let pixelFormat: String
    let planes: [[UInt8]]
}

/// Decodes every frame of the best `type` stream of `path` and hands each to `body` with the stream's
/// time base and the container's start time.
func decodeStream(
    _ path: String, _ type: MediaType, _ body: (Frame, StreamInfo, Double) throws -> Void
) throws {
    let input = try InputContext(path: path)
    guard let index = input.bestStream(type) else { throw TestFailure("\(path) has no \(type)") }
    let info = input.streams[index]
    let decoder = try input.makeDecoder(streamIndex: index)
    let packet = Packet()
    func drain() throws {
        while true {
            let frame = Frame()
            guard try decoder.receive(into: frame) == .output else { return }
            try body(frame, info, input.startSeconds)
        }
    }
    while try input.read(into: packet) == .packet {
        guard packet.streamIndex == index else { continue }
        _ = try decoder.send(packet)
        try drain()
    }
    _ = try decoder.send(nil)
    try drain()
}

func decodeAudio(_ path: String) throws -> DecodedAudio {
    var samples: [Float] = []
    var start: Double?
    var format: AudioFormat?
    var resampler: Resampler?
    try decodeStream(path, .audio) { frame, info, containerStart in
        if start == nil, frame.pts != noTimestamp {
            start = Double(frame.pts) * info.timeBase.doubleValue - containerStart
        }
        let output =
            format ?? AudioFormat(sampleRate: info.sampleRate, channelCount: info.channelCount, sampleFormat: .float)
        format = output
        let converter = resampler ?? Resampler(output: output)
        resampler = converter
        let converted = try converter.convert(frame)
        converted.withUnsafeMutableAudioPlanes { planes in
            let floats = UnsafeRawPointer(planes[0].base).assumingMemoryBound(to: Float.self)
            samples.append(
                contentsOf: UnsafeBufferPointer(start: floats, count: converted.sampleCount * output.channelCount))
        }
    }
    guard let format else { throw TestFailure("\(path): no audio decoded") }
    return DecodedAudio(
        sampleRate: format.sampleRate, channels: format.channelCount, samples: samples, start: start ?? 0)
}

func decodeVideo(_ path: String) throws -> [DecodedPicture] {
    var pictures: [DecodedPicture] = []
    try decodeStream(path, .video) { frame, info, containerStart in
        let planes = frame.withUnsafeMutablePlanes { planes in
            planes.map { plane in (0..<plane.rows).flatMap { row in plane.withRow(row) { Array($0) } } }
        }
        pictures.append(
            DecodedPicture(
                time: Double(frame.pts) * info.timeBase.doubleValue - containerStart, width: frame.width,
                height: frame.height, pixelFormat: frame.pixelFormat.name, planes: planes))
    }
    return pictures
}

/// The streams of a file, by media type.
func streamTypes(_ path: String) throws -> [MediaType] {
    try InputContext(path: path).streams.map(\.mediaType)
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Intervals of media time, for checking output against a schedule.
struct Intervals {
    let ranges: [(Double, Double)]

    /// True when `[start, end)` overlaps any interval.
    func overlaps(_ start: Double, _ end: Double) -> Bool {
        ranges.contains { start < $0.1 && end > $0.0 }
    }

    /// True when `time` is inside an interval.
    func contains(_ time: Double) -> Bool { ranges.contains { time >= $0.0 && time < $0.1 } }
}

/// Checks that `output` is `reference` with the samples in `muted` silenced: zero inside, from each
/// interval's first sample (the schedule is known ahead, so the ramp of at most 5 ms down ends there),
/// bit-identical outside (except those 5 ms before each interval's start and 5 ms after its end).
/// Returns a description of the first mismatch, or nil.
func checkMuting(output: DecodedAudio, reference: DecodedAudio, muted: Intervals, from offset: Double = 0)
    -> String?
{
    guard output.sampleRate == reference.sampleRate, output.channels == reference.channels else {
        return
            "format \(output.sampleRate)/\(output.channels) differs from \(reference.sampleRate)/\(reference.channels)"
    }
    let rate = Double(reference.sampleRate)
    let ramp = 0.005
    let first = Int(((offset - reference.start) * rate).rounded())
    guard abs(output.frameCount - (reference.frameCount - first)) <= 1 else {
        return "output has \(output.frameCount) frames, reference \(reference.frameCount - first) from \(offset) s"
    }
    var zeros = 0
    var identical = 0
    for frame in 0..<min(output.frameCount, reference.frameCount - first) {
        let time = offset + Double(frame) / rate
        let inRamp = muted.ranges.contains {
            (time >= $0.0 - ramp && time < $0.0) || (time >= $0.1 && time < $0.1 + ramp)
        }
        for channel in 0..<output.channels {
            let value = output[frame, channel]
            let original = reference[frame + first, channel]
            if inRamp {
                guard abs(value) <= abs(original) + 1e-7 else {
                    return "ramp sample at \(time) s louder than the original: \(value) vs \(original)"
                }
            } else if muted.contains(time) {
                guard value == 0 else { return "sample at \(time) s channel \(channel) is \(value), not 0" }
                zeros += 1
            } else {
                guard value.bitPattern == original.bitPattern else {
                    return "sample at \(time) s channel \(channel) is \(value), plain decode has \(original)"
                }
                identical += 1
            }
        }
    }
    if muted.ranges.isEmpty == false && zeros == 0 { return "no muted samples at all" }
    // Sample accuracy: the ramp down ends on the sample before an interval's first (which is zero,
    // checked above), and the ramp up starts on the first sample after it (both checked where the
    // original is not silent).
    for range in muted.ranges {
        for (edge, rising) in [(range.0, false), (range.1, true)] where edge.isFinite {
            let frame = Int(((edge - offset) * rate).rounded()) - (rising ? 0 : 1)
            guard frame >= 0, frame < output.frameCount, frame + first < reference.frameCount else { continue }
            for channel in 0..<output.channels {
                let value = output[frame, channel]
                let original = reference[frame + first, channel]
                guard original != 0 else { continue }
                if abs(value) >= abs(original) { return "sample at the \(edge) s edge is not attenuated" }
                if rising && value == 0 { return "the ramp up does not start at \(edge) s" }
            }
        }
    }
    return nil
}

/// Checks video against a plain decode: frames shown during `masked` intervals are masked (`isMasked`),
/// the others are identical. Returns a description of the first mismatch, or nil.
func checkMasking(
    output: [DecodedPicture], reference: [DecodedPicture], masked: Intervals,
    isMasked: (DecodedPicture, DecodedPicture) -> Bool
) -> String? {
    guard output.count == reference.count else {
        return "output has \(output.count) frames, the plain decode \(reference.count)"
    }
    var maskedCount = 0
    for (index, (out, original)) in zip(output, reference).enumerated() {
        let end = index + 1 < reference.count ? reference[index + 1].time : original.time + 1.0 / 25
        if abs(out.time - original.time) > 0.002 {
            return "frame \(index) at \(out.time) s, expected \(original.time) s"
        }
        if masked.overlaps(original.time, end) {
            guard isMasked(out, original) else { return "frame \(index) at \(original.time) s is not masked" }
            maskedCount += 1
        } else {
            guard out.planes == original.planes else {
                return "frame \(index) at \(original.time) s differs from the plain decode"
            }
        }
    }
    if !masked.ranges.isEmpty && maskedCount == 0 { return "no frame fell inside the intervals" }
    return nil
}

/// True when every luma sample is black (16, or 0 at full range) and chroma is neutral.
func isBlack(_ picture: DecodedPicture, _ original: DecodedPicture) -> Bool {
    picture.planes.count >= 3 && picture.planes[0].allSatisfy { $0 == 16 || $0 == 0 }
        && picture.planes[1].allSatisfy { $0 == 128 } && picture.planes[2].allSatisfy { $0 == 128 }
}

/// Mean absolute difference of two equally long runs of samples (infinite when their lengths differ).
func meanDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
    guard a.count == b.count, !a.isEmpty else { return .infinity }
    return Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
}
