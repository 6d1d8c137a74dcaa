import Foundation
import MediaCore
import Testing

/// Issue 9 §6 "Opus start time shifts the gate": `--simulate-recording` intervals are in presentation
/// time, 0 being the first sample a user hears, whatever the container's start time says. Opus in
/// WebM starts at -7 ms (its 312 priming samples, which the decoder drops), and was muted over
/// [0.993, 2.993] s instead of [1, 3]; MP3's encoder delay and an AAC edit list must not move it either.
@Suite(.hangGuard) struct GateStartTimeTests {
    enum Source: String, CaseIterable, Sendable {
        case opusInWebM, opusInOgg, mp3EncoderDelay, aacEditList

        /// The input, made at test time where the fixture is in another container.
        func make(in directory: TemporaryDirectory) throws -> String {
            switch self {
            case .opusInWebM:
                let path = directory.path("chime.webm")
                let made = try ffmpeg(["-i", fixture("chime.opus"), "-c", "copy", path])
                try #require(made.status == 0, "\(made.stderr)")
                return path
            case .opusInOgg: return fixture("chime.opus")
            case .mp3EncoderDelay: return fixture("voice-22k-mono.mp3")
            case .aacEditList: return fixture("song.m4a")
            }
        }
    }

    @Test(arguments: Source.allCases)
    func theGateSwitchesAtPresentationTime(_ source: Source) throws {
        let directory = try TemporaryDirectory()
        let input = try source.make(in: directory)
        let out = directory.path("out.wav")
        let result = try guardPlay([input, "--simulate-recording=1-3", "--output", out, "--status", "none"])
        #expect(result.status == 0, "\(result.stderr)")
        let output = try decodeAudio(out)
        // The plain decode from its first sample, which is media time 0 however the container counts.
        let decoded = try decodeAudio(input)
        let reference = DecodedAudio(
            sampleRate: decoded.sampleRate, channels: decoded.channels, samples: decoded.samples, start: 0)
        // Zero inside [1, 3] from its first sample (the known schedule's ramp ends there), bit-identical
        // outside, and the ramp down's first sample lies in the 5 ms before sample round(1.0 × rate).
        #expect(checkMuting(output: output, reference: reference, muted: Intervals(ranges: [(1, 3)])) == nil)
        let rate = Double(output.sampleRate)
        let edge = Int((1.0 * rate).rounded())
        let firstChanged = (0..<min(output.frameCount, reference.frameCount)).first { frame in
            (0..<output.channels).contains { output[frame, $0].bitPattern != reference[frame, $0].bitPattern }
        }
        let changed = try #require(firstChanged, "nothing was muted")
        #expect(changed >= edge - Int(0.005 * rate) && changed < edge, "first muted sample \(changed), edge \(edge)")
    }
}
