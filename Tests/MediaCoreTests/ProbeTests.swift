import Foundation
import MediaCore
import Testing

@Suite struct ProbeTests {
    @Test func probeRecognisesContentWithoutTheName() throws {
        let song = try #require(InputContext.probeContent(path: mediaDirectory.appendingPathComponent("song.m4a").path))
        #expect(song.formatName.hasPrefix("mov") && song.score == 100)
        let flac = try #require(
            InputContext.probeContent(path: mediaDirectory.appendingPathComponent("chime-48k.flac").path))
        #expect(flac.formatName == "flac")
    }

    @Test func probeDoesNotTrustAnExtension() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).m4a").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var state: UInt64 = 1
        let bytes = (0..<65_536).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        #expect((InputContext.probeContent(path: path)?.score ?? 0) < 50)
    }

    @Test func discardedStreamsAreSkipped() throws {
        func bytes(discarding: Bool) throws -> (audio: Int, other: Int) {
            let input = try InputContext(path: mediaDirectory.appendingPathComponent("clip.mp4").path)
            let audio = try #require(input.bestStream(.audio))
            if discarding { input.discardStreams(except: [audio]) }
            let packet = Packet()
            var counts = (audio: 0, other: 0)
            while try input.read(into: packet) == .packet {
                if packet.streamIndex == audio { counts.audio += packet.size } else { counts.other += packet.size }
            }
            return counts
        }
        let all = try bytes(discarding: false)
        let discarded = try bytes(discarding: true)
        #expect(discarded.audio == all.audio)
        // Only the few packets the demuxer buffered while probing the streams still come through.
        #expect(discarded.other * 20 < all.other)
    }

    @Test func aReadErrorAtTheEndOfACutFileIsAtEndOfFile() throws {
        let data = try Data(contentsOf: mediaDirectory.appendingPathComponent("clip.mp4"))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).mp4").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(FileManager.default.createFile(atPath: path, contents: data.prefix(data.count / 3)))
        let input = try InputContext(path: path)
        let packet = Packet()
        var failed = false
        reading: while true {
            do {
                if try input.read(into: packet) == .endOfStream { break reading }
            } catch {
                failed = true
                break reading
            }
        }
        #expect(failed || input.isAtEndOfFile)
        #expect(input.isAtEndOfFile)
    }
}
