import Foundation
import Testing

/// fMP4 audio is cut on the video's grid (multiples of the segment duration from its first picture),
/// not a target duration from each segment's own start: a segment of whole AAC frames is a little longer than the target (44.1 kHz
/// frames of 1024 samples: 87 frames, 2.020 s, for 2 s), so cut from each segment's start the audio's
/// boundaries drifted 20 ms a segment from the video's, and a rotated asset lost its MPD once a key
/// period's audio started more than 0.1 s off the video's (segment 6: 0.12 s).
@Suite(.timeLimit(.minutes(30))) struct AudioCutGridTests {
    /// `tfdt`'s base media decode time in a segment file (`moof` → `traf` → `tfdt`).
    static func baseDecodeTime(_ path: String) throws -> Int {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let moof = try #require(try MP4Boxes.boxes(bytes[...]).first { $0.type == "moof" }, "\(path): no moof")
        let traf = try #require(try MP4Boxes.boxes(moof.body).first { $0.type == "traf" }, "\(path): no traf")
        let tfdt = try #require(try MP4Boxes.boxes(traf.body).first { $0.type == "tfdt" }, "\(path): no tfdt")
        let body = Array(tfdt.body)
        let width = body.first == 1 ? 8 : 4
        try #require(body.count >= 4 + width, "\(path): tfdt of \(body.count) bytes")
        return body[4..<(4 + width)].reduce(0) { $0 << 8 | Int($1) }
    }

    /// A media playlist's segment durations (EXTINF) and URIs, in order.
    static func entries(_ playlist: String) throws -> [(duration: Double, uri: String)] {
        var result: [(duration: Double, uri: String)] = []
        var duration: Double? = nil
        for line in try String(contentsOfFile: playlist, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("#EXTINF:") {
                duration = Double(line.dropFirst("#EXTINF:".count).split(separator: ",")[0])
            } else if !line.hasPrefix("#"), let value = duration {
                result.append((value, String(line)))
                duration = nil
            }
        }
        return result
    }

    @Test func rotatedAudioStaysOnTheVideosGridAndTheAssetKeepsItsMPD() throws {
        let directory = try TemporaryDirectory()
        let source = directory.path("source.mp4")
        let made = try ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=16", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=44100:duration=16", "-c:v", "libx264", "-preset", "ultrafast", "-g",
            "60", "-keyint_min", "60", "-sc_threshold", "0", "-c:a", "aac", "-shortest", source,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        let output = directory.path("out")
        let result = try guardPlay([
            "package", source, "--out", output, "--key", testKey, "--container", "fmp4", "--segment-duration", "2",
            "--key-period", "3", "--key-uri", "../keys/{kid}",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        let said = result.stdout + result.stderr
        #expect(!said.contains("no manifest.mpd"), "\(said)")

        // Audio segment k starts within one AAC frame at or after video segment k, in the files' own
        // tfdt (the video has no B-frames, so its decoding times are its presentation times), for every k
        // after the first (that one starts with the encoder's priming frame, a frame before the picture);
        // before the fix segment 7 started 0.14 s late. There are as many of each: the audio's last frame,
        // trimmed to end with the video, is no sliver of a segment of its own.
        let rate = 44_100.0
        let frame = 1024 / rate
        let audio = try Self.entries(output + "/audio-1.m3u8")
        let video = try Self.entries(output + "/video.m3u8")
        try #require(video.count == 8, "\(video.map(\.uri))")
        #expect(audio.count == video.count, "\(video.count) video segments, \(audio.count) audio")
        let audioStarts = try audio.map { Double(try Self.baseDecodeTime(output + "/" + $0.uri)) / rate }
        let videoStarts = try video.map { Double(try Self.baseDecodeTime(output + "/" + $0.uri)) / 90_000 }
        for (index, (sound, picture)) in zip(audioStarts, videoStarts).enumerated().dropFirst() {
            let off = sound - picture
            #expect(off > -0.0012 && off < frame, "audio segment \(index) starts \(off) s off the video's")
            #expect(abs(picture - videoStarts[0] - Double(index) * 2) < 0.0012, "video segment \(index)")
        }

        // The MPD has a Period per key period, and in each the video's first segment starts at the
        // Period's start, the audio's within one AAC frame of it (Period 0's a frame early, its priming).
        let mpd = try DASHRotationTests.parse(output + "/manifest.mpd")
        try #require(mpd.periods.count == (video.count + 2) / 3, "\(mpd.periods.map(\.id))")
        for (index, period) in mpd.periods.enumerated() {
            #expect(period.sets.map(\.contentType) == ["video", "audio"], "period \(index)")
            for set in period.sets {
                let first = Double(set.times[0] - set.pto) / Double(set.timescale)
                let tolerance = set.contentType == "video" ? 0.0011 : frame + 0.0011
                #expect(abs(first) <= tolerance, "period \(index) \(set.id) starts \(first) s off its Period")
            }
            #expect(abs(period.start - Double(index) * 6) < 0.0011, "period \(index) starts at \(period.start)")
        }
    }
}

extension AudioCutGridTests {
    /// The first PES timestamp (90 kHz) in a TS segment, as ffprobe reads it.
    static func firstTimestamp(_ path: String) throws -> Int {
        let probed = try run(
            "/usr/bin/ffprobe",
            ["-v", "error", "-show_entries", "packet=pts", "-read_intervals", "%+#1", "-of", "csv=p=0", path])
        try #require(probed.status == 0, "\(path): \(probed.stderr)")
        let field = probed.stdout.split(whereSeparator: { $0 == "\n" || $0 == "," }).first
        return try #require(field.flatMap { Int($0) }, "\(path): no timestamp in \(probed.stdout)")
    }

    /// TS audio without video is cut on the same grid, from the presentation's start: two renditions of
    /// 44.1 and 48 kHz, whose frames overshoot 2 s by 20 and 5 ms, start segment k together (before the
    /// fix the 44.1 kHz one's segment 7 started 0.12 s late, the 48 kHz one's 0.016 s).
    @Test func tsAudioWithoutVideoIsCutOnTheGrid() throws {
        let directory = try TemporaryDirectory()
        let source = directory.path("source.mp4")
        let made = try ffmpeg([
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=16", "-f", "lavfi", "-i",
            "sine=frequency=660:sample_rate=48000:duration=16", "-map", "0", "-map", "1", "-c:a", "aac", source,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        let output = directory.path("out")
        let result = try package(source, output, ["--encryption", "none", "--segment-duration", "2"])
        try #require(result.status == 0, "\(result.stderr)")
        for (name, rate) in [("audio-1", 44_100.0), ("audio-2", 48_000.0)] {
            let segments = try Self.entries(output + "/\(name).m3u8")
            #expect(segments.count == 8, "\(name): \(segments.map(\.uri))")
            for (index, segment) in segments.enumerated().dropFirst() {
                // The presentation starts at 1.4 s in the TS timeline, as FFmpeg's muxers start.
                let start = Double(try Self.firstTimestamp(output + "/" + segment.uri) - 126_000) / 90_000
                let off = start - Double(index) * 2
                #expect(off > -0.0012 && off < 1024 / rate, "\(name) segment \(index) starts \(off) s off the grid")
            }
        }
    }
}
