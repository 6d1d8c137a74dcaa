import Crypto
import Foundation
import Testing

@testable import Packager

/// `SegmentPayloadSpool`: a segment's samples, spooled to a scratch file, follow its header into the
/// segment file byte for byte (spliced in clear, read back and encrypted under AES-128), segment after
/// segment, and the scratch file never shows in the directory, whether the run finishes or not.
@Suite struct SegmentPayloadSpoolTests {
    static let key = [UInt8](repeating: 0x2B, count: 16)
    static let iv = [UInt8](0..<16)

    /// Samples of `sizes` bytes, each of its own pattern.
    static func samples(_ sizes: [Int], seed: UInt8) -> [[UInt8]] {
        sizes.enumerated().map { index, size in
            (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 7) ^ seed }
        }
    }

    /// The names in `directory`, sorted.
    static func listing(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    @Test(arguments: [false, true])
    func segmentsHoldTheirHeaderThenTheirSamplesAndNoScratchFileShows(aes128: Bool) throws {
        let scratch = try Scratch()
        let writer = BackgroundWriter()
        let spool = try SegmentPayloadSpool(directory: scratch.path, name: ".video.samples", writer: writer)
        #expect(try Self.listing(scratch.path) == [])
        // A first segment past several writer buffers (one sample larger than a buffer), then a shorter
        // one, which must not carry the first one's tail.
        let segments = [
            Self.samples([200_000, 90_000, 400_000, 3, 70_000], seed: 0x11), Self.samples([1_000, 20_000], seed: 0x5A),
        ]
        for (number, samples) in segments.enumerated() {
            for sample in samples {
                let buffer = spool.sampleBuffer(reserving: sample.count)
                buffer.append(sample)
            }
            let header = [UInt8](repeating: UInt8(number), count: 37)
            let file = try SegmentFile(
                path: scratch.path + "/segment\(number)", aes128: aes128 ? (Self.key, Self.iv) : nil, writer: writer)
            file.buffer.append(header)
            try spool.move(to: file)
            try file.close()
            try writer.drain()
            let clear = header + samples.flatMap { $0 }
            let expected = aes128 ? try AES128Padded.encrypt(clear, key: Self.key, iv: Self.iv) : clear
            let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: scratch.path + "/segment\(number)")))
            #expect(written == expected)
        }
        #expect(try Self.listing(scratch.path) == ["segment0", "segment1"])
    }

    @Test func aSpoolDroppedBeforeItsCutLeavesNothingBehind() throws {
        let scratch = try Scratch()
        let writer = BackgroundWriter()
        do {
            let spool = try SegmentPayloadSpool(directory: scratch.path, name: ".audio-1.samples", writer: writer)
            for sample in Self.samples([300_000, 300_000], seed: 1) {
                spool.sampleBuffer(reserving: sample.count).append(sample)
            }
        }
        try writer.drain()
        #expect(try Self.listing(scratch.path) == [])
    }

    @Test func aScratchNameThatExistsIsRefused() throws {
        let scratch = try Scratch()
        #expect(FileManager.default.createFile(atPath: scratch.path + "/.video.samples", contents: Data([1])))
        #expect(throws: PackagingError.self) {
            try SegmentPayloadSpool(directory: scratch.path, name: ".video.samples", writer: BackgroundWriter())
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.path + "/.video.samples")) == Data([1]))
    }
}
