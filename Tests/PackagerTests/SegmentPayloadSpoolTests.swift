import Crypto
import Foundation
import MediaFormats
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
            Self.samples([200_000, 90_000, SegmentFile.flushThreshold + 100_000, 3, 70_000], seed: 0x11),
            Self.samples([1_000, 20_000], seed: 0x5A),
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

    /// Samples whose encryption is left to the writer reach the segment file as if each had been
    /// encrypted where it lay (`cbcs`, a separate cipher as the reference), over several buffers.
    @Test func samplesEncryptedByTheWriterEqualSamplesEncryptedInPlace() throws {
        let scratch = try Scratch()
        let writer = BackgroundWriter()
        let spool = try SegmentPayloadSpool(directory: scratch.path, name: ".video.samples", writer: writer)
        let cipher = try CENCSampleCipher(scheme: .cbcs, key: Self.key, encrypt: true)
        let reference = try CENCSampleCipher(scheme: .cbcs, key: Self.key, encrypt: true)
        var expected = [UInt8](repeating: 9, count: 21)
        for (index, var sample) in Self.samples([300_000, 5_000, 260_000, 40, 1_000], seed: 0x33).enumerated() {
            let subsamples = [Subsample(clear: 7, protected: sample.count - 7)]
            let buffer = spool.sampleBuffer(reserving: sample.count)
            let start = buffer.count
            buffer.append(sample)
            spool.encryptLater(
                DeferredEncryption(
                    cipher: cipher, range: start..<buffer.count, subsamples: index == 3 ? [] : subsamples,
                    iv: Self.iv, kind: "video frame", pts: TimestampMapper.startOffset))
            try reference.process(&sample, subsamples: index == 3 ? [] : subsamples, iv: Self.iv)
            expected += sample
        }
        let file = try SegmentFile(path: scratch.path + "/segment", aes128: nil, writer: writer)
        file.buffer.append([UInt8](repeating: 9, count: 21))
        try spool.move(to: file)
        try file.close()
        try writer.drain()
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: scratch.path + "/segment")))
        #expect(written.count == expected.count)
        #expect(written == expected)
    }

    /// An encryption the writer cannot run fails the job, naming the sample; nothing of it is written.
    @Test func anEncryptionThatFailsOnTheWriterFailsTheJob() throws {
        let scratch = try Scratch()
        let writer = BackgroundWriter()
        let spool = try SegmentPayloadSpool(directory: scratch.path, name: ".video.samples", writer: writer)
        let buffer = spool.sampleBuffer(reserving: 100)
        buffer.append([UInt8](repeating: 1, count: 100))
        spool.encryptLater(
            DeferredEncryption(
                cipher: try CENCSampleCipher(scheme: .cbcs, key: Self.key, encrypt: true), range: 0..<100,
                subsamples: [Subsample(clear: 10, protected: 80)], iv: Self.iv, kind: "video frame",
                pts: TimestampMapper.startOffset + 1_125_000))
        let file = try SegmentFile(path: scratch.path + "/segment", aes128: nil, writer: writer)
        // Reported by the next step that asks the writer: the move, or the drain.
        let failure = #expect(throws: PackagingError.self) {
            try spool.move(to: file)
            try writer.drain()
        }
        #expect(failure?.kind == .outputFailed)
        let message = failure.map { "\($0)" } ?? ""
        #expect(message.contains("cannot encrypt the video frame at 12.500 s"))
        #expect(message.contains("90 bytes of a 100-byte sample"))
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
