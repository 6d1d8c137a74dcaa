import Foundation
import MediaFormats
import Testing

@testable import Packager

/// The fMP4 path takes the demuxer's packets as they are (`SourceReader`'s `cmafSamples`): each CMAF
/// sample built from a length-prefixed (or TS's Annex-B) packet and its NAL units, and each raw AAC
/// frame, must equal the one built through the Annex-B and ADTS conversion the TS path runs.
@Suite struct CMAFSampleRouteTests {
    /// The CMAF samples of `file`'s video and first audio stream, through one route or the other.
    private func samples(_ file: String, direct: Bool) throws -> (
        video: [([UInt8], [Int])], audio: [[UInt8]], packets: Int
    ) {
        let reader = try SourceReader(
            path: media.appendingPathComponent(file).path, stillFrames: 1, stillGOP: 1, maxPixels: 1 << 24,
            cmafSamples: { _ in direct })
        var conversion = VideoSampleConversion(codec: reader.plan.video?.codec ?? .h264)
        var video: [([UInt8], [Int])] = []
        var audio: [[UInt8]] = []
        var packets = 0
        while let (slot, unit) = try reader.next() {
            if reader.plan.streams[slot].codec.isAudio {
                guard slot == reader.plan.streams.firstIndex(where: { $0.codec.isAudio }) else { continue }
            }
            if unit.packet != nil { packets += 1 }
            if reader.plan.streams[slot].codec.isAudio {
                if let packet = unit.packet {
                    audio.append(packet.bytes)
                } else {
                    audio += try AACSampleBuilder.samples(unit.bytes)
                }
            } else {
                let buffer = ByteBuffer()
                let units = try conversion.append(unit, to: buffer)
                video.append((buffer.bytes, units.flatMap { [$0.size, $0.clear] }))
            }
        }
        return (video, audio, packets)
    }

    @Test(arguments: ["clip.mp4", "dual-audio.mp4", "video-only.mp4", "hevc.mp4", "hevc-ts.ts", "hevc-mkv.mkv"])
    func packetsMakeTheSamplesTheConversionMakes(file: String) throws {
        let converted = try samples(file, direct: false)
        let direct = try samples(file, direct: true)
        #expect(converted.packets == 0)
        #expect(direct.packets == direct.video.count + direct.audio.count || file.hasSuffix(".ts"))
        #expect(direct.packets > 0)
        #expect(!converted.video.isEmpty && direct.video.count == converted.video.count)
        for (index, (ours, theirs)) in zip(direct.video, converted.video).enumerated() {
            #expect(ours.0 == theirs.0, "video sample \(index) of \(file) differs")
            #expect(ours.1 == theirs.1, "the NAL sizes and clear bytes of video sample \(index) of \(file) differ")
        }
        #expect(direct.audio == converted.audio, "the AAC frames of \(file) differ")
    }
}
