import Foundation
import ProcessTestSupport
import Testing

/// The player takes what ffplay takes: an HLS playlist, here the packager's own clear output.
@Suite(.hangGuard) struct PlayPlaylistTests {
    /// The fixture `name` packaged without encryption in 2 s segments under `directory`; its path.
    func clearPackage(_ name: String, in directory: TemporaryDirectory) throws -> String {
        let hls = directory.path("hls")
        let packaged = try package(fixture(name), hls, ["--encryption", "none", "--segment-duration", "2"])
        try #require(packaged.status == 0, "\(packaged.stderr)")
        return hls
    }

    @Test func playsAndMasksAnHLSPlaylist() throws {
        let directory = try TemporaryDirectory()
        let hls = try clearPackage("clip.mp4", in: directory)
        let playlist = hls + "/master.m3u8"
        let out = directory.path("out.mkv")
        let result = try guardPlay([playlist, "--simulate-recording=2-5", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        let video = try decodeVideo(out)
        let reference = try decodeVideo(playlist)
        #expect(reference.count == 300)
        // Times are media seconds from the container's start, as the player's schedule counts them.
        let masked = Intervals(ranges: [(2, 5)])
        #expect(checkMasking(output: video, reference: reference, masked: masked, isMasked: isBlack) == nil)
    }
}

extension PlayPlaylistTests {
    /// A SAMPLE-AES package played from disk: the player lets FFmpeg read the key file beside the
    /// output, so every frame decodes as from the clear package except the one FFmpeg 5.1 leaves
    /// undecrypted (the last in decoding order, display index 298; see FFmpegSecondOpinionTests).
    @Test func playsASampleAESPackageWithItsLocalKey() throws {
        let directory = try TemporaryDirectory()
        let protected = directory.path("protected")
        let clear = directory.path("clear")
        #expect(try package(fixture("clip.mp4"), protected).status == 0)
        #expect(try package(fixture("clip.mp4"), clear, ["--encryption", "none"]).status == 0)
        let out = directory.path("out.mkv")
        let result = try guardPlay([protected + "/master.m3u8", "--simulate-recording=2-5", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        let video = try decodeVideo(out)
        let reference = try decodeVideo(clear + "/master.m3u8")
        #expect(video.count == 300 && reference.count == 300)
        let schedule = Intervals(ranges: [(2, 5)])
        var inside = 0
        var equal = 0
        var masked = 0
        for (index, (ours, theirs)) in zip(video, reference).enumerated() {
            let end = index + 1 < reference.count ? reference[index + 1].time : theirs.time + 1.0 / 30
            if schedule.overlaps(theirs.time, end) {
                inside += 1
                if isBlack(ours, theirs) { masked += 1 }
            } else if ours.planes == theirs.planes {
                equal += 1
            } else {
                #expect(index == 298, "frame \(index) at \(theirs.time) s differs from the clear package")
            }
        }
        // About 3 s of 30 fps video falls inside the schedule, all of it masked.
        #expect((89...92).contains(inside) && masked == inside)
        #expect(equal == 300 - inside - 1)
    }
}

extension PlayPlaylistTests {
    /// FFmpeg 5.1 crashes (SIGSEGV) on a master playlist whose audio rendition lists no segments; the
    /// player refuses it with the truncated-input code instead, and plays the package once it is whole.
    @Test func refusesAPackageWhosePlaylistsFFmpegCannotSurvive() throws {
        let directory = try TemporaryDirectory()
        let hls = try clearPackage("dual-audio.mp4", in: directory)
        let master = try String(contentsOfFile: hls + "/master.m3u8", encoding: .utf8)
        #expect(master.contains(#"URI="audio-1.m3u8""#), "\(master)")
        let rendition = hls + "/audio-1.m3u8"
        let whole = try String(contentsOfFile: rendition, encoding: .utf8)
        try "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-ENDLIST\n".write(toFile: rendition, atomically: true, encoding: .utf8)

        let refused = try guardPlay([hls + "/master.m3u8", "--fast", "--output", "null", "--status", "none"])
        #expect(refused.status == 14, "\(refused.stderr)")
        #expect(refused.stderr.contains("rendition playlist 'audio-1.m3u8' lists no segments"), "\(refused.stderr)")

        // FFmpeg 5.1 also loops without end, allocating gigabytes a second, on a playlist that names
        // itself as a variant; the player refuses that too.
        try whole.write(toFile: rendition, atomically: true, encoding: .utf8)
        let video = hls + "/video.m3u8"
        let media = try String(contentsOfFile: video, encoding: .utf8)
        try (media + "#EXT-X-STREAM-INF:BANDWIDTH=1\nvideo.m3u8\n").write(
            toFile: video, atomically: true, encoding: .utf8)
        let looped = try guardPlay([hls + "/master.m3u8", "--fast", "--output", "null", "--status", "none"])
        #expect(looped.status == 14, "\(looped.stderr)")
        #expect(
            looped.stderr.contains("the playlist 'video.m3u8' it names is itself a master playlist"), "\(looped.stderr)"
        )

        try media.write(toFile: video, atomically: true, encoding: .utf8)
        let played = try guardPlay([hls + "/master.m3u8", "--fast", "--output", "null", "--status", "none"])
        #expect(played.status == 0, "\(played.stderr)")
    }
}

extension PlayPlaylistTests {
    /// The CPU time (user + system, in clock ticks) process `pid` has used so far, from /proc.
    func cpuTicks(_ pid: pid_t) -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// A playlist without EXT-X-ENDLIST is live: as ffplay does, the player plays what it lists and then
    /// waits for the playlist to grow. A stop ends that wait at once, as a clean stop with its summary;
    /// without that, the read would go on waiting until the signal handler's last resort exits 130 after
    /// 5 s, with no summary.
    @Test func aStopEndsTheWaitForALivePlaylistAtOnce() throws {
        let directory = try TemporaryDirectory()
        let hls = try clearPackage("clip.mp4", in: directory)
        let media = hls + "/video.m3u8"
        let vod = try String(contentsOfFile: media, encoding: .utf8)
        try vod.replacingOccurrences(of: "#EXT-X-ENDLIST\n", with: "").write(
            toFile: media, atomically: true, encoding: .utf8)
        let events = directory.path("events.jsonl")
        let player = try SpawnedProcess(
            [guardPlayBinary, hls + "/master.m3u8", "--fast", "--output", "null", "--status", "json"], output: events,
            errors: directory.path("stderr"))
        defer { player.end(grace: 0) }
        // Decoding runs at full speed (tens of ticks in half a second); waiting for a reload barely uses
        // the CPU. Once it is waiting, every segment it will play has been read.
        var last = cpuTicks(player.pid) ?? 0
        let waiting = eventually(timeout: 60) {
            usleep(500_000)
            guard let now = cpuTicks(player.pid) else { return false }
            defer { last = now }
            return now - last < 10
        }
        #expect(waiting && player.isRunning, "the player never settled into waiting for the live playlist")
        player.signal(SIGTERM)
        #expect(player.wait(timeout: 30) == 130)
        let end = fileText(events).split(separator: "\n").last { $0.contains(#""event":"end""#) }
        #expect(end?.contains(#""reason":"stopped""#) == true, "\(fileText(events))")
        #expect(end?.contains(#""damaged_packets":0"#) == true, "\(String(describing: end))")
    }
}
