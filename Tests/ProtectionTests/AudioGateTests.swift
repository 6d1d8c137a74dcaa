import Foundation
import Protection
import Testing

/// A deterministic non-zero test signal, interleaved.
private func signal(frames: Int, channels: Int) -> [Float] {
    (0..<(frames * channels)).map { index in Float(0.25 + 0.5 * Double((index * 7919) % 1000) / 1000) }
}

@Suite struct AudioGateTests {
    @Test func openGateLeavesSamplesBitIdentical() {
        var gate = AudioGate(sampleRate: 48_000)
        let original = signal(frames: 4800, channels: 2)
        var samples = original
        samples.withUnsafeMutableBufferPointer { gate.process($0, channels: 2) }
        #expect(samples == original)
    }

    @Test(arguments: [22_050, 44_100, 48_000])
    func closingRampsToExactSilenceWithinFiveMilliseconds(sampleRate: Int) {
        var gate = AudioGate(sampleRate: sampleRate)
        let frames = sampleRate / 10
        let original = signal(frames: frames, channels: 2)
        var samples = original
        let switchAt = 1000
        samples.withUnsafeMutableBufferPointer {
            gate.process($0, channels: 2, switches: [AudioGate.Switch(frame: switchAt, open: false)])
        }
        let rampFrames = Int(Double(sampleRate) * 0.005)
        #expect(gate.rampLength <= rampFrames)
        // Before the switch: untouched.
        #expect(Array(samples[0..<(switchAt * 2)]) == Array(original[0..<(switchAt * 2)]))
        // From the end of the ramp on: exact zeros.
        let silentFrom = (switchAt + gate.rampLength - 1) * 2
        #expect(samples[silentFrom...].allSatisfy { $0 == 0 && $0.sign == .plus })
        // Inside the ramp: gains fall monotonically, following a raised cosine.
        var previous: Float = 1
        for frame in switchAt..<(switchAt + gate.rampLength) {
            let gain = samples[frame * 2] / original[frame * 2]
            #expect(gain <= previous + 1e-6)
            let phase = Double(switchAt + gate.rampLength - 1 - frame)
            let expected = 0.5 - 0.5 * cos(Double.pi * phase / Double(gate.rampLength))
            #expect(abs(Double(gain) - expected) < 1e-5)
            previous = gain
        }
    }

    @Test func reopeningRampsBackAndThenPassesThrough() {
        var gate = AudioGate(sampleRate: 44_100, open: false)
        let original = signal(frames: 2000, channels: 1)
        var samples = original
        samples.withUnsafeMutableBufferPointer {
            gate.process($0, channels: 1, switches: [AudioGate.Switch(frame: 500, open: true)])
        }
        #expect(samples[0..<500].allSatisfy { $0 == 0 })
        #expect(samples[500] > 0 && samples[500] < original[500])
        let openFrom = 500 + gate.rampLength - 1
        #expect(Array(samples[openFrom...]) == Array(original[openFrom...]))
        #expect(gate.isTransparent)
    }

    @Test func gateStateCarriesAcrossBuffersAndReversalsStaySmooth() {
        var split = AudioGate(sampleRate: 48_000)
        var whole = AudioGate(sampleRate: 48_000)
        let original = signal(frames: 1000, channels: 2)
        var a = original
        var b = original
        let switches = [AudioGate.Switch(frame: 100, open: false), AudioGate.Switch(frame: 200, open: true)]
        a.withUnsafeMutableBufferPointer { whole.process($0, channels: 2, switches: switches) }
        b.withUnsafeMutableBufferPointer { buffer in
            split.process(
                UnsafeMutableBufferPointer(rebasing: buffer[0..<300]), channels: 2,
                switches: [AudioGate.Switch(frame: 100, open: false)])
            split.process(
                UnsafeMutableBufferPointer(rebasing: buffer[300..<2000]), channels: 2,
                switches: [AudioGate.Switch(frame: 50, open: true)])
        }
        #expect(a == b)
        // The reversal at frame 200 happens mid-ramp (240 frames): the gain never jumps by more than one step.
        var largest: Float = 0
        for frame in 1..<1000 {
            let step = abs(a[frame * 2] / original[frame * 2] - a[(frame - 1) * 2] / original[(frame - 1) * 2])
            largest = max(largest, step)
        }
        #expect(largest < 0.01)
    }
}
