import Foundation
import MediaCore
import ProcessTestSupport
import Testing

/// Bad input: each case gets its own one-line error and exit code, and never a crash.
@Suite(.hangGuard) struct BadInputTests {
    /// Makes a bad file in `directory` and returns its path.
    enum Case: String, CaseIterable, Sendable {
        case missing, empty, textNamedM4A, randomBytes, truncatedIndex, truncatedData, noStreams

        func make(in directory: TemporaryDirectory) throws -> String {
            switch self {
            case .missing:
                return directory.path("no-such-file.m4a")
            case .empty:
                let path = directory.path("empty.m4a")
                _ = FileManager.default.createFile(atPath: path, contents: Data())
                return path
            case .textNamedM4A:
                let path = directory.path("notes.m4a")
                try "These are notes, not music.\nSecond line.\n".write(toFile: path, atomically: true, encoding: .utf8)
                return path
            case .randomBytes:
                let path = directory.path("noise.m4a")
                var generator = SplitMix(seed: 42)
                let bytes = (0..<65_536).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
                return path
            case .truncatedIndex:
                // song.m4a keeps its index (moov) at the end: cutting the file loses it.
                let path = directory.path("cut.m4a")
                let data = try Data(contentsOf: URL(fileURLWithPath: fixture("song.m4a")))
                _ = FileManager.default.createFile(atPath: path, contents: data.prefix(data.count / 2))
                return path
            case .truncatedData:
                // clip.mp4 has its index first (faststart): cutting the file loses the second half of the data.
                let path = directory.path("cut.mp4")
                let data = try Data(contentsOf: URL(fileURLWithPath: fixture("clip.mp4")))
                _ = FileManager.default.createFile(atPath: path, contents: data.prefix(data.count / 3))
                return path
            case .noStreams:
                let subtitles = directory.path("subtitles.srt")
                try "1\n00:00:00,000 --> 00:00:02,000\nHello\n".write(
                    toFile: subtitles, atomically: true, encoding: .utf8)
                let path = directory.path("subtitles-only.mkv")
                try run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", subtitles, "-c:s", "srt", path])
                return path
            }
        }

        var expected: (status: Int32, message: String) {
            switch self {
            case .missing: (10, "no such file")
            case .empty: (11, "the file is empty")
            case .textNamedM4A: (12, "this is a text file, not media")
            case .randomBytes: (13, "not a media format FFmpeg recognises")
            case .truncatedIndex: (14, "truncated or damaged")
            case .truncatedData: (14, "truncated: the data ends at")
            case .noStreams: (15, "no audio or video stream (subtitle)")
            }
        }
    }

    @Test(arguments: Case.allCases)
    func badInputGetsItsOwnErrorAndExitCode(_ badCase: Case) throws {
        let directory = try TemporaryDirectory()
        let path = try badCase.make(in: directory)
        let out = directory.path("out.wav")
        let result = try guardPlay([path, "--output", out, "--status", "none"])
        #expect(result.status == badCase.expected.status, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("guard-play: '\(path)': "))
        #expect(result.stderr.contains(badCase.expected.message), "\(result.stderr)")
        // Nothing half-written is left where the output was expected.
        #expect(!FileManager.default.fileExists(atPath: out))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter {
            $0.contains("partial")
        }
        #expect(leftovers.isEmpty)
    }

    /// Each kind of bad input ends with a code of its own, different from a usage error's and a bad
    /// value's; the codes are the ones real runs end with. (A cut index and cut data are both
    /// "truncated", one code.)
    @Test func exitCodesAreDistinct() throws {
        let directory = try TemporaryDirectory()
        var codes: [String: Int32] = [:]
        for badCase in Case.allCases where badCase != .truncatedData {
            let path = try badCase.make(in: directory)
            codes[badCase.rawValue] =
                try guardPlay([path, "--output", directory.path("out.wav"), "--status", "none"]).status
        }
        codes["usage"] = try guardPlay([fixture("song.m4a"), "--no-such-option"]).status
        codes["bad value"] = try guardPlay([fixture("song.m4a"), "--volume", "9"]).status
        #expect(Set(codes.values).count == codes.count, "\(codes.sorted { $0.value < $1.value })")
        #expect(!codes.values.contains(0), "\(codes)")
    }

    @Test(arguments: [
        (["--no-such-option"], Int32(2), "unknown option '--no-such-option'"),
        (["--simulate-recording=5-2"], 3, "interval '5-2' ends before it starts"),
        (["--simulate-recording=every:0"], 3, "'every:' needs a period from 0.01 to 1e9 seconds"),
        // A period this short pinned a core for ever (media time could never pass the next change).
        (["--simulate-recording=every:1e-300"], 3, "'every:' needs a period from 0.01 to 1e9 seconds, not '1e-300'"),
        (["--simulate-recording=every:1e-9"], 3, "'every:' needs a period from 0.01 to 1e9 seconds"),
        (["--simulate-recording=0-20000000000"], 3, "'20000000000' in '0-20000000000' is more than 1e9 seconds"),
        (["--simulate-stall=1e12"], 3, "invalid spec '1e12': expected the media time in seconds (0 to 1e9)"),
        // 1e300 seconds trapped converting the seek target to microseconds.
        (["--start", "1e300", "--output", "null"], 3, "invalid value '1e300' for --start: expected seconds from 0"),
        (["--start", "-1"], 3, "invalid value '-1' for --start"),
        (["--length", "1e300"], 3, "invalid value '1e300' for --length"),
        (["--length", "0"], 3, "invalid value '0' for --length"),
        (["--simulate-recording=2-x"], 3, "'x' in '2-x' is not a number"),
        (["--simulate-stall=soon"], 3, "--simulate-stall"),
        (["--mask", "blur"], 3, "invalid value 'blur' for --mask"),
        (["--on-unknown", "maybe"], 3, "invalid value 'maybe' for --on-unknown"),
        (["--volume", "-1"], 3, "invalid value '-1' for --volume"),
        (["--fast", "--realtime"], 2, "cannot be used together"),
        (["--output", "out.xyz"], 20, "unknown extension"),
        (["--mask", "image:/no/such/image.png"], 3, "cannot read mask image"),
    ])
    func badOptionsGetTheirOwnErrors(arguments: [String], status: Int32, message: String) throws {
        let result = try guardPlay([fixture("song.m4a")] + arguments)
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func aStartAtTheLimitPlaysNothingAndEnds() throws {
        let result = try guardPlay([
            fixture("clip.mp4"), "--start", "1e9", "--output", "null", "--simulate-recording=every:0.01",
            "--status", "json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let end = try #require(try jsonEvents(result.stdout).last)
        #expect(end["event"] as? String == "end" && end["reason"] as? String == "end", "\(end)")
        #expect(end["audio_frames"] as? Double == 0 && end["video_frames"] as? Double == 0, "\(end)")
    }

    /// Timestamps a container can hold but no media has: an audio stream that starts 290 million years
    /// after the video, and a video stream starting 1e9 s after the audio. Sample counts derived from them
    /// overflowed `Int` (a trap), and stepping a fine schedule across the gap one change at a time never
    /// ended.
    @Test func extremeTimestampsNeitherTrapNorHang() throws {
        let directory = try TemporaryDirectory()
        let farAudio = directory.path("far-audio.mkv")
        try run(
            "/usr/bin/ffmpeg",
            [
                "-v", "error", "-y", "-i", fixture("clip.mp4"), "-t", "2", "-c", "copy", "-bsf:a",
                "setts=ts=TS+190000000000000/TB", farAudio,
            ])
        let cut = directory.path("cut.mkv")
        let cutRun = try guardPlay([farAudio, "--length", "1", "--output", cut, "--status", "json"], timeout: 60)
        #expect(cutRun.status == 0, "\(cutRun.stderr)")
        // The second of video is there; the audio, all of it past the end, is not.
        let summary = try #require(try jsonEvents(cutRun.stdout).last)
        #expect(summary["video_frames"] as? Double == 30 && summary["audio_frames"] as? Double == 0, "\(summary)")
        #expect(try decodeVideo(cut).count == 30)

        let videoOnly = directory.path("late-video-part.mkv")
        try run(
            "/usr/bin/ffmpeg",
            [
                "-v", "error", "-y", "-i", fixture("clip.mp4"), "-an", "-t", "2", "-c", "copy", "-output_ts_offset",
                "1000000000", videoOnly,
            ])
        let audioOnly = directory.path("audio-part.mkv")
        try run(
            "/usr/bin/ffmpeg",
            ["-v", "error", "-y", "-i", fixture("clip.mp4"), "-vn", "-t", "2", "-c", "copy", audioOnly])
        let lateVideo = directory.path("late-video.mkv")
        try run(
            "/usr/bin/ffmpeg",
            [
                "-v", "error", "-y", "-copyts", "-i", audioOnly, "-i", videoOnly, "-map", "0:a", "-map", "1:v", "-c",
                "copy", lateVideo,
            ])
        #expect(try InputContext(path: lateVideo).streams.map(\.mediaType) == [.audio, .video])
        let out = directory.path("late.mkv")
        let late = try guardPlay(
            [lateVideo, "--simulate-recording=every:0.5", "--output", out, "--status", "json"], timeout: 60)
        #expect(late.status == 0, "\(late.stderr)")
        // Video shown at 1e9 s, in the schedule's recording half there (1e9 / 0.5 is even: clear, then
        // recording from 1e9 + 0.5), is masked exactly where the schedule says.
        let frames = try decodeVideo(out)
        #expect(frames.count >= 50, "\(frames.count) frames")
        // The part's own times count from its container start, 1e9 s.
        let reference = try decodeVideo(videoOnly)
        var checked = (masked: 0, clear: 0)
        for frame in frames {
            let original = try #require(reference.first { abs($0.time + 1e9 - frame.time) < 0.002 })
            let phase = original.time / 0.5
            if phase > 1.01 && phase < 1.95 {
                #expect(isBlack(frame, original), "frame at \(frame.time) s")
                checked.masked += 1
            } else if phase > 0.05 && phase < 0.95 {
                #expect(frame.planes == original.planes, "frame at \(frame.time) s")
                checked.clear += 1
            }
        }
        #expect(checked.masked >= 10 && checked.clear >= 10, "\(checked)")
    }

    @Test func damageInTheMiddlePlaysOnWithAWarning() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("damaged.mp4")
        var data = try Data(contentsOf: URL(fileURLWithPath: fixture("clip.mp4")))
        var generator = SplitMix(seed: 7)
        for index in (data.count / 2)..<(data.count / 2 + 30_000) {
            data[index] = UInt8(truncatingIfNeeded: generator.next())
        }
        _ = FileManager.default.createFile(atPath: path, contents: data)
        let out = directory.path("out.mkv")
        let result = try guardPlay([path, "--simulate-recording=8-", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning: damaged data near"))
        // It played on past the damage to the end: the last seconds are there, masked as scheduled.
        let video = try decodeVideo(out)
        #expect((video.last?.time ?? 0) > 9.5)
        #expect(video.filter { $0.time >= 8 }.allSatisfy { isBlack($0, $0) })
        #expect(video.count > 250)
    }
}
