import Foundation
import MediaCore
import Testing

/// The issue's acceptance checks, run against the built `guard-play` and checked by decoding its output.
@Suite(.hangGuard) struct PlayAcceptanceTests {
    @Test func mutesSampleAccuratelyInAWav() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.wav")
        let result = try guardPlay([fixture("song.m4a"), "--simulate-recording=2-5", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        let output = try decodeAudio(out)
        let reference = try decodeAudio(fixture("song.m4a"))
        #expect(checkMuting(output: output, reference: reference, muted: Intervals(ranges: [(2, 5)])) == nil)
        // The muted stretch is really there: 3 s of exact zeros in both channels.
        let zeros = output.samples[(2 * 44_100 + 300) * 2..<(5 * 44_100 - 10) * 2]
        #expect(zeros.allSatisfy { $0 == 0 })
        #expect(reference.samples[(2 * 44_100 + 300) * 2..<(5 * 44_100 - 10) * 2].contains { $0 != 0 })
    }

    @Test func masksBlackInsideIntervalsAndKeepsOtherFramesBitExact() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.mkv")
        let result = try guardPlay([fixture("clip.mp4"), "--simulate-recording=2-5,8-", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        let intervals = Intervals(ranges: [(2, 5), (8, .infinity)])
        let video = try decodeVideo(out)
        let reference = try decodeVideo(fixture("clip.mp4"))
        #expect(checkMasking(output: video, reference: reference, masked: intervals, isMasked: isBlack) == nil)
        let audio = try decodeAudio(out)
        #expect(checkMuting(output: audio, reference: try decodeAudio(fixture("clip.mp4")), muted: intervals) == nil)
    }

    @Test func pixelateLeavesNothingOfTheOriginal() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.mkv")
        let result = try guardPlay([
            fixture("clip.mp4"), "--simulate-recording=3-6", "--mask", "pixelate", "--output", out,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let video = try decodeVideo(out)
        let reference = try decodeVideo(fixture("clip.mp4"))
        // The README's blocks: at least 1/12 of the picture height, 30 rows of the clip's 360 (and 15 in its
        // half-height chroma planes).
        #expect(reference.first?.height == 360 && reference.first?.pixelFormat == "yuv420p")
        var problems: [String] = []
        let problem = checkMasking(output: video, reference: reference, masked: Intervals(ranges: [(3, 6)])) {
            masked, original in
            guard let problem = pixelationProblem(masked, original, lumaBlock: 30) else { return true }
            problems.append("frame at \(original.time) s: \(problem)")
            return false
        }
        #expect(problem == nil, "\(problems.first ?? "")")
    }

    @Test func imageMaskShowsTheImage() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.mkv")
        let result = try guardPlay([
            fixture("video-only.mp4"), "--simulate-recording=1-2", "--mask", "image:\(fixture("qr-still.png"))",
            "--output", out,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let video = try decodeVideo(out)
        let reference = try decodeVideo(fixture("video-only.mp4"))
        let masked = video.filter { $0.time >= 1.01 && $0.time < 1.99 }
        #expect(masked.count >= 20)
        // Every masked frame is the same picture (the image), unlike the moving test pattern it replaced.
        #expect(Set(masked.map(\.planes)).count == 1)
        #expect(
            checkMasking(output: video, reference: reference, masked: Intervals(ranges: [(1, 2)])) { out, original in
                out.planes == masked[0].planes && out.planes != original.planes
            } == nil)
    }

    /// Audio-only fixtures of every rate, layout and codec the issue names.
    @Test(arguments: ["song.m4a", "voice-22k-mono.mp3", "chime-48k.flac", "chime.opus", "mono-48k.m4a"])
    func mutesEveryAudioFormat(name: String) throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.wav")
        let result = try guardPlay([fixture(name), "--simulate-recording=1-2.5", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        let output = try decodeAudio(out)
        let reference = try decodeAudio(fixture(name))
        #expect(
            checkMuting(
                output: output, reference: reference, muted: Intervals(ranges: [(1, 2.5)]), from: reference.start)
                == nil)
    }

    @Test func masksAVideoOnlyFile() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.mkv")
        let result = try guardPlay([fixture("video-only.mp4"), "--simulate-recording=1-2.5", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try streamTypes(out) == [.video])
        let problem = checkMasking(
            output: try decodeVideo(out), reference: try decodeVideo(fixture("video-only.mp4")),
            masked: Intervals(ranges: [(1, 2.5)]), isMasked: isBlack)
        #expect(problem == nil)
    }

    @Test func aStalledSourceFailsClosedUnlessAllowed() throws {
        let directory = try TemporaryDirectory()
        // The heartbeat renews every 0.5 s until 3 s; its last lease (from 3 s) lapses at 4 s.
        let protected = directory.path("protect.mkv")
        let result = try guardPlay([
            fixture("clip.mp4"), "--simulate-stall=3", "--output", protected, "--status", "json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let states = try jsonEvents(result.stdout).filter { $0["event"] as? String == "state" }
        #expect(states.count == 1)
        #expect(states.first?["state"] as? String == "unknown")
        #expect(states.first?["source"] as? String == "heartbeat")
        #expect((states.first?["time"] as? Double).map { abs($0 - 4) < 1e-6 } == true)
        let lapsed = Intervals(ranges: [(4, .infinity)])
        let reference = try decodeVideo(fixture("clip.mp4"))
        #expect(
            checkMasking(output: try decodeVideo(protected), reference: reference, masked: lapsed, isMasked: isBlack)
                == nil)
        let referenceAudio = try decodeAudio(fixture("clip.mp4"))
        #expect(checkMuting(output: try decodeAudio(protected), reference: referenceAudio, muted: lapsed) == nil)

        let allowed = directory.path("allow.mkv")
        let allow = try guardPlay([
            fixture("clip.mp4"), "--simulate-stall=3", "--on-unknown", "allow", "--output", allowed,
        ])
        #expect(allow.status == 0, "\(allow.stderr)")
        let none = Intervals(ranges: [])
        #expect(
            checkMasking(output: try decodeVideo(allowed), reference: reference, masked: none, isMasked: isBlack) == nil
        )
        #expect(checkMuting(output: try decodeAudio(allowed), reference: referenceAudio, muted: none) == nil)
    }

    @Test(arguments: [
        ("every:3", [(3.0, "capturing"), (6, "clear"), (9, "capturing")]),
        ("2-5,8-", [(2.0, "capturing"), (5, "clear"), (8, "capturing")]),
        ("", [(0.0, "capturing")]),
    ])
    func jsonEventsMatchTheSchedule(spec: String, expected: [(Double, String)]) throws {
        let result = try guardPlay([
            fixture("clip.mp4"), spec.isEmpty ? "--simulate-recording" : "--simulate-recording=\(spec)", "--output",
            "null", "--status", "json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try jsonEvents(result.stdout)
        #expect(events.first?["event"] as? String == "start")
        #expect(events.last?["event"] as? String == "end")
        var changes = events.filter { $0["event"] as? String == "state" }.map {
            (($0["time"] as? Double) ?? -1, ($0["state"] as? String) ?? "")
        }
        // A schedule that records from the start is already capturing in the `start` line.
        if let start = events.first, start["state"] as? String == "capturing" {
            changes.insert((0, "capturing"), at: 0)
        }
        #expect(changes.count == expected.count)
        for (change, want) in zip(changes, expected) {
            #expect(abs(change.0 - want.0) < 1e-6 && change.1 == want.1, "\(change) vs \(want)")
        }
        #expect(events.last?["state_changes"] as? Double == Double(spec.isEmpty ? 0 : expected.count))
        #expect((events.last?["video_frames"] as? Double) == 300)
    }
}

/// Why `masked` is not a pixelation of `original` with `lumaBlock`-sized blocks (half that in the 4:2:0
/// chroma planes), or nil when it is: each block one level throughout, a level of the 8-level grid (16,
/// 48, … 240) within half a step of the mean of the original block, and more than one level in the picture.
func pixelationProblem(_ masked: DecodedPicture, _ original: DecodedPicture, lumaBlock: Int) -> String? {
    guard masked.planes.count == 3, masked.width == original.width, masked.height == original.height else {
        return "not a 3-plane picture of the original's size"
    }
    var lumaLevels = Set<UInt8>()
    for plane in 0..<3 {
        let width = plane == 0 ? masked.width : (masked.width + 1) / 2
        let height = plane == 0 ? masked.height : (masked.height + 1) / 2
        let edge = plane == 0 ? lumaBlock : lumaBlock / 2
        let pixels = masked.planes[plane]
        let source = original.planes[plane]
        for top in stride(from: 0, to: height, by: edge) {
            for left in stride(from: 0, to: width, by: edge) {
                let rows = top..<min(top + edge, height)
                let columns = left..<min(left + edge, width)
                let value = pixels[top * width + left]
                var sum = 0
                for y in rows {
                    for x in columns {
                        guard pixels[y * width + x] == value else {
                            return "plane \(plane) block at \(left),\(top) is not uniform"
                        }
                        sum += Int(source[y * width + x])
                    }
                }
                let mean = Double(sum) / Double(rows.count * columns.count)
                guard value % 32 == 16, abs(Double(value) - mean) <= 16 else {
                    return "plane \(plane) block at \(left),\(top) is \(value), the original's mean \(mean)"
                }
                if plane == 0 { lumaLevels.insert(value) }
            }
        }
    }
    return lumaLevels.count > 1 ? nil : "one flat luma level \(lumaLevels)"
}

/// The first picture of `path` scaled by libswscale to the size and pixel format of `picture`.
func scaledPicture(_ path: String, like picture: DecodedPicture) throws -> [[UInt8]] {
    var planes: [[UInt8]]?
    let format = try #require(PixelFormat(name: picture.pixelFormat))
    try decodeStream(path, .video) { frame, _, _ in
        guard planes == nil else { return }
        let scaled = try Scaler(width: picture.width, height: picture.height, pixelFormat: format).scale(frame)
        planes = scaled.withUnsafeMutablePlanes { planes in
            planes.map { plane in (0..<plane.rows).flatMap { row in plane.withRow(row) { Array($0) } } }
        }
    }
    return try #require(planes, "\(path) holds no picture")
}

/// Parses JSON lines.
func jsonEvents(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw TestFailure("not a JSON object: \(line)")
        }
        return object
    }
}
