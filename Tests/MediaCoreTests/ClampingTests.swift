import Foundation
import MediaCore
import Testing

/// Conversions of media times to integers, which a container's timestamps can push anywhere.
@Suite struct ClampingTests {
    @Test(arguments: [
        (2.4, Int64(2)), (2.5, 3), (-2.5, -3), (0, 0),
        (1e300, .max), (-1e300, .min), (Double.infinity, .max), (-Double.infinity, .min), (Double.nan, .min),
        // Double(Int64.max) is 2^63, one past Int64.max: it must clamp, not trap.
        (9_223_372_036_854_775_807.0, .max), (-9_223_372_036_854_775_808.0, .min),
    ])
    func int64RoundsAndClamps(value: Double, expected: Int64) {
        #expect(Int64(roundingAndClamping: value) == expected)
    }

    @Test func aRangeBoundsTheResult() {
        #expect(Int(roundingAndClamping: -4.8e20, to: 0...1024) == 0)
        #expect(Int(roundingAndClamping: 4.8e20, to: 0...1024) == 1024)
        #expect(Int(roundingAndClamping: 511.6, to: 0...1024) == 512)
        #expect(Int(roundingAndClamping: .nan, to: 0...1024) == 0)
        #expect(Int32(roundingAndClamping: 3e9) == .max)
    }

    @Test func aSeekFarPastTheEndDoesNotTrap() throws {
        let input = try InputContext(path: mediaDirectory.appendingPathComponent("song.m4a").path)
        // 1e300 s in microseconds is far beyond Int64; FFmpeg is asked for the largest target instead.
        try? input.seek(toSeconds: 1e300)
        try? input.seek(toSeconds: -1e300)
        try input.seek(toSeconds: 0)
        let packet = Packet()
        #expect(try input.read(into: packet) == .packet)
    }
}
