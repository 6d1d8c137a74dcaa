import Foundation
import MediaCore
import Testing

/// The ffplay/mpv-style options, checked on decoded output.
@Suite(.hangGuard) struct PlayOptionTests {
    @Test func startAndLengthCutTheOutput() throws {
        // FLAC decodes the same after a seek as in one pass (AAC's noise substitution does not), so the
        // cut can be compared bit for bit.
        let directory = try TemporaryDirectory()
        let out = directory.path("out.wav")
        let result = try guardPlay([
            fixture("chime-48k.flac"), "--start", "1.5", "--length", "2", "--simulate-recording=2.5-", "--output", out,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let output = try decodeAudio(out)
        #expect(output.frameCount == 2 * 48_000)
        let reference = try decodeAudio(fixture("chime-48k.flac"))
        // 1.5 s to 2.5 s is the original but for the 5 ms ramp before 2.5 s, and from 2.5 s on it is
        // muted to the first sample (the schedule is in media time and known ahead).
        let played = Array(output.samples[0..<((48_000 - 240) * 2)])
        let original = Array(reference.samples[(72_000 * 2)..<((120_000 - 240) * 2)])
        #expect(played == original, "first difference at \(played.indices.first { played[$0] != original[$0] } ?? -1)")
        #expect(output.samples[(48_000 * 2)...].allSatisfy { $0 == 0 })
    }

    @Test func muteSilencesAndVolumeScales() throws {
        let directory = try TemporaryDirectory()
        let muted = directory.path("muted.wav")
        #expect(try guardPlay([fixture("chime-48k.flac"), "--mute", "--output", muted]).status == 0)
        #expect(try decodeAudio(muted).samples.allSatisfy { $0 == 0 })
        let half = directory.path("half.wav")
        #expect(try guardPlay([fixture("chime-48k.flac"), "--volume", "0.5", "--output", half]).status == 0)
        let reference = try decodeAudio(fixture("chime-48k.flac"))
        let output = try decodeAudio(half)
        #expect(output.samples.count == reference.samples.count)
        #expect(zip(output.samples, reference.samples).allSatisfy { $0 == $1 * 0.5 })
    }

    @Test func noVideoAndNoAudioDropAStream() throws {
        let directory = try TemporaryDirectory()
        let audioOnly = directory.path("a.mkv")
        #expect(try guardPlay([fixture("clip.mp4"), "--no-video", "--output", audioOnly]).status == 0)
        #expect(try streamTypes(audioOnly) == [.audio])
        let videoOnly = directory.path("v.mkv")
        #expect(try guardPlay([fixture("clip.mp4"), "--no-audio", "--output", videoOnly]).status == 0)
        #expect(try streamTypes(videoOnly) == [.video])
    }

    @Test func loopPlaysAgainWithTheScheduleInMediaTime() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.wav")
        let result = try guardPlay([
            fixture("chime-48k.flac"), "--loop", "2", "--simulate-recording=1-2", "--output", out,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let output = try decodeAudio(out)
        let reference = try decodeAudio(fixture("chime-48k.flac"))
        #expect(output.frameCount == 2 * reference.frameCount)
        let first = Array(output.samples[0..<reference.samples.count])
        let second = Array(output.samples[reference.samples.count...])
        #expect(first == second, "first difference at \(first.indices.first { first[$0] != second[$0] } ?? -1)")
        #expect(first[(48_000 + 300) * 2..<(2 * 48_000 * 2)].allSatisfy { $0 == 0 })
    }

    @Test func mp4OutputHoldsBothStreams() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out.mp4")
        let result = try guardPlay([fixture("clip.mp4"), "--simulate-recording=2-3", "--output", out])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try streamTypes(out) == [.audio, .video])
        let video = try decodeVideo(out)
        #expect(video.count == 300)
        // H.264 is lossy, but a masked frame still decodes as (near) black, and an unmasked one does not.
        let masked = video.filter { $0.time > 2.1 && $0.time < 2.9 }
        #expect(!masked.isEmpty && masked.allSatisfy { $0.planes[0].allSatisfy { $0 <= 20 } })
        #expect(video.filter { $0.time < 1.9 }.allSatisfy { Set($0.planes[0]).count > 16 })
    }

    @Test func realtimeWithoutASoundCardFallsBackAndFollowsTheSchedule() throws {
        let result = try guardPlay(
            [fixture("song.m4a"), "--simulate-recording=0.5-1", "--length", "1.5", "--status", "json"],
            environment: ["SDL_AUDIODRIVER": "none-such-driver"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try jsonEvents(result.stdout)
        let warnings = events.filter { $0["event"] as? String == "warning" }.compactMap { $0["message"] as? String }
        #expect(warnings.count == 1 && warnings[0].hasPrefix("no audio device"), "\(warnings)")
        #expect(events.first { $0["event"] as? String == "start" }?["output"] as? String == "null (no audio device)")
        let states = events.filter { $0["event"] as? String == "state" }
        #expect(states.map { $0["state"] as? String } == ["capturing", "clear"])
        #expect(states.map { $0["time"] as? Double } == [0.5, 1])
        #expect(events.last?["audio_frames"] as? Double == 1.5 * 44_100)
        #expect(events.last?["audio_frames_protected"] as? Double == 0.5 * 44_100)
    }

    @Test func realtimeThroughTheSDLCallbackGatesSampleAccurately() throws {
        // SDL's dummy driver consumes audio in real time through the same callback a sound card uses.
        let result = try guardPlay(
            [fixture("song.m4a"), "--simulate-recording=0.5-1", "--length", "1.5", "--status", "json"],
            environment: ["SDL_AUDIODRIVER": "dummy"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try jsonEvents(result.stdout)
        #expect(!events.contains { $0["event"] as? String == "warning" })
        #expect(events.first { $0["event"] as? String == "start" }?["output"] as? String == "device")
        let states = events.filter { $0["event"] as? String == "state" }
        #expect(states.map { $0["state"] as? String } == ["capturing", "clear"])
        #expect(states.map { $0["time"] as? Double } == [0.5, 1])
        #expect(events.last?["audio_frames_protected"] as? Double == 0.5 * 44_100)
    }

    @Test func theDemoRunsWithoutDeviceOrDisplayAndEnds() throws {
        // What `make run` does, shortened: realtime, no sound card, no display, the state changing.
        let result = try guardPlay(
            [fixture("clip.mp4"), "--simulate-recording=every:3", "--start", "2", "--length", "2"],
            environment: headlessEnvironment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("3.0 s  capturing (simulated"))
        #expect(result.stderr.contains("end (end)"))
    }
}

extension PlayOptionTests {
    @Test func theNoDisplayNoticeReachesAStandardErrorThatIsNotATerminal() throws {
        // The notice is queued before playback starts, and opening the sound card points standard error
        // at /dev/null for a moment; delivered into that gap, it was lost in about one run in four. Twenty
        // runs would all have kept it by chance less than once in a hundred.
        for _ in 0..<20 {
            let result = try guardPlay([fixture("clip.mp4"), "--length", "0.05"], environment: headlessEnvironment)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix("guard-play: note: no display (DISPLAY and WAYLAND_DISPLAY are unset)"),
                "\(result.stderr)")
        }
    }

    @Test func statusLineRedrawsOneLineInPlace() throws {
        let result = try guardPlay(
            [fixture("song.m4a"), "--simulate-recording=0.5-", "--length", "1.2", "--status", "line"],
            environment: headlessEnvironment.merging(["SDL_AUDIODRIVER": "dummy"]) { $1 })
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        // Each drawing clears the line and redraws it without a newline; the last one ends the line. The
        // first is drawn at once and the last at the end, so there are always at least two.
        let drawings = result.stderr.components(separatedBy: "\r\u{1B}[K")
        #expect(drawings.first == "" && drawings.count >= 3, "\(result.stderr.debugDescription)")
        for drawing in drawings.dropFirst().dropLast() {
            #expect(!drawing.contains("\n"), "\(drawing.debugDescription)")
            #expect(drawing.contains("/1.2 s  ") && drawing.contains(" (simulated)"), "\(drawing.debugDescription)")
        }
        // The total is the length played, and the state is spelt as in the log lines.
        #expect(drawings.last == "   1.2/1.2 s  capturing (simulated)  audio muted\n", "\(drawings.last ?? "")")
    }

    @Test func flacOutputIsMutedSampleAccurately() throws {
        // FLAC is lossless: the output is the plain decode (24-bit) with exactly the scheduled stretch muted.
        let directory = try TemporaryDirectory()
        let out = try recordChime(as: "flac", codec: "flac", in: directory)
        let problem = checkMuting(
            output: try decodeAudio(out), reference: try decodeAudio(fixture("chime-48k.flac")),
            muted: Intervals(ranges: [(1, 2)]))
        #expect(problem == nil)
    }

    @Test func m4aOutputIsMutedWithinWhatAACKeeps() throws {
        // AAC is lossy and its frames overlap by 1024 samples, so the check leaves 50 ms either side of
        // each edge and compares levels rather than samples.
        let directory = try TemporaryDirectory()
        let out = try recordChime(as: "m4a", codec: "aac", in: directory)
        let output = try decodeAudio(out)
        let reference = try decodeAudio(fixture("chime-48k.flac"))
        #expect(output.sampleRate == reference.sampleRate && output.channels == reference.channels)
        #expect(abs(output.frameCount - reference.frameCount) <= 2048, "\(output.frameCount) frames")
        func stretch(_ audio: DecodedAudio, _ from: Double, _ to: Double) -> ArraySlice<Float> {
            let rate = Double(audio.sampleRate)
            return audio.samples[(Int(from * rate) * audio.channels)..<(Int(to * rate) * audio.channels)]
        }
        let muted = stretch(output, 1.05, 1.95)
        #expect(muted.allSatisfy { abs($0) < 1e-3 }, "peak \(muted.map(abs).max() ?? 0) while recording")
        #expect(rms(stretch(reference, 1.05, 1.95)) > 0.01, "the reference is silent there too")
        for (from, to) in [(0.05, 0.95), (2.05, 3.5)] {
            let played = stretch(output, from, to)
            let original = stretch(reference, from, to)
            let error = rms(zip(played, original).map { $0 - $1 }[...])
            #expect(error < 0.1 * rms(original), "\(from)-\(to) s: error \(error) of \(rms(original))")
        }
    }
}

/// Plays the chime into `out.EXTENSION` with a simulated recording from 1 to 2 s; checks the run and the
/// codec written, and returns the path.
private func recordChime(as extension: String, codec: String, in directory: TemporaryDirectory) throws -> String {
    let out = directory.path("out.\(`extension`)")
    let result = try guardPlay([fixture("chime-48k.flac"), "--simulate-recording=1-2", "--output", out])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(try InputContext(path: out).streams.map(\.codecName) == [codec])
    return out
}

/// The root mean square of `samples`.
private func rms(_ samples: ArraySlice<Float>) -> Double {
    guard !samples.isEmpty else { return 0 }
    return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
}
