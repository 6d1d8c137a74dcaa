import Foundation
import ProcessTestSupport
import Testing

/// `--flicker` in a real window on a private X server, captured by real screenshot tools and a real
/// `ffmpeg -f x11grab` recording. The picture is the QR still (black and white): a screenshot must hold
/// about half of its white pixels, a second of recording must average back to it.
///
/// "At the documented brightness": on a black background the pair averages to the picture where its
/// linear light is at most 0.5, and to linear 0.5 (sRGB 188) above, so white is expected as 188.
@Suite(.hangGuard) struct FlickerAcceptanceTests {
    static let still = "qr-still.png"

    @Test func noSingleScreenshotHoldsMoreThan55PercentOfTheRegion() throws {
        let directory = try TemporaryDirectory()
        let display = try VirtualDisplay()
        let player = try FlickeringStill(on: display, in: directory)
        let source = try player.source()
        let white = source.pixels.indices.filter { source.pixels[$0] > 128 }
        #expect(white.count > source.pixels.count / 4)

        var tools: [[String]] = [
            [
                "/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-f", "x11grab", "-draw_mouse", "0", "-i", display.name,
                "-frames:v", "1", "-y", "SHOT.png",
            ],
            ["/usr/bin/import", "-display", display.name, "-window", "root", "SHOT.png"],
        ]
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/scrot") {
            tools.append(["/usr/bin/scrot", "-o", "SHOT.png"])
        }
        var shares: [String: [Double]] = [:]
        for index in 0..<100 {
            let tool = tools[index % tools.count]
            let path = directory.path("shot-\(index).png")
            let shot = try SpawnedProcess(
                tool.map { $0 == "SHOT.png" ? path : $0 }, environment: ["DISPLAY": display.name],
                errors: directory.path("tool.log"))
            let status = shot.wait(timeout: 30)
            shot.end()
            try #require(status == 0, "\(tool[0]) failed (\(String(describing: status)))")
            let screen = try decodePicture(path)
            // The share of the picture's white pixels the screenshot shows white (within 40 levels).
            let held = white.filter { screen.level(at: $0, of: source, origin: player.origin) >= 215 }.count
            shares[tool[0], default: []].append(Double(held) / Double(white.count))
        }
        for (tool, values) in shares.sorted(by: { $0.key < $1.key }) {
            let worst = values.max() ?? 1
            let least = values.min() ?? 0
            print("flicker: \(tool) × \(values.count): held \(percent(least))–\(percent(worst)) of the white pixels")
            #expect(worst <= 0.55, "\(tool): a screenshot held \(percent(worst)) of the region")
            // And the window was there: a phase draws about half, not nothing.
            #expect(least >= 0.40, "\(tool): a screenshot held only \(percent(least)): was the window drawn?")
        }
        let end = try player.stop()
        let measured = end["flicker_refresh_measured_hz"] as? Double ?? 0
        print(
            "flicker: measured \(measured) Hz, \(end["flicker_presents"] ?? "?") presents, "
                + "\(end["flicker_missed_vsyncs"] ?? "?") missed vsyncs (reported \(end["flicker_refresh_reported_hz"] ?? "?") Hz)"
        )
        #expect(measured > 30 && measured < 70, "measured refresh \(measured) Hz")
        #expect(end["flicker_presents"] as? Double ?? 0 > 100)
        #expect(end["flicker_missed_vsyncs"] is Double)
    }

    @Test func aCaptureStillMasksAFlickeringPicture() throws {
        let directory = try TemporaryDirectory()
        let display = try VirtualDisplay()
        let player = try BackgroundPlayer(
            [fixture(Self.still), "--flicker", "--loop", "0", "--simulate-recording"],
            environment: ["DISPLAY": display.name, "SDL_AUDIODRIVER": "dummy"], in: directory)
        #expect(ProcessTestSupport.eventually(timeout: 30) { !player.events("start").isEmpty }, "\(player.errors)")
        #expect(player.events("start").first?["protecting"] as? Bool == true)
        let windowUp = ProcessTestSupport.eventually(timeout: 20) {
            guard
                let search = try? SpawnedProcess(
                    ["/usr/bin/xdotool", "search", "--onlyvisible", "--name", "guard-play: \(Self.still)"],
                    environment: ["DISPLAY": display.name], output: "/dev/null")
            else { return false }
            defer { search.end() }
            return search.wait(timeout: 10) == 0
        }
        #expect(windowUp, "no window: \(player.errors)")
        // The window shows the black mask, not half of the picture.
        for _ in 0..<10 {
            let share = try display.screenshot(in: directory).brightShare(above: 128)
            #expect(share < 0.001, "a masked window showed \(share) of the screen bright")
        }
        player.process.signal(SIGINT)
        #expect(player.process.wait(timeout: 20) != nil)
        let end = try #require(player.events("end").last, "\(player.errors)")
        #expect(end["video_frames_masked"] as? Double ?? 0 > 0)
        #expect(end["flicker_presents"] as? Double == 0, "a masked picture flickered: \(end)")
    }

    @Test(arguments: ["0,0,10", "0,0,0,10", "-1,0,4,4", "a,b,c,d"])
    func aBadRegionIsRefused(region: String) throws {
        let result = try guardPlay([fixture(Self.still), "--flicker=\(region)"], environment: headlessEnvironment)
        #expect(result.status == 3)
        #expect(result.stderr.contains("invalid value '\(region)' for --flicker: expected x,y,w,h"), "\(result.stderr)")
    }

    @Test func flickerWithoutAWindowIsRefused() throws {
        let directory = try TemporaryDirectory()
        for extra in [["--output", directory.path("out.mkv")], ["--video-out", "null"]] {
            let result = try guardPlay([fixture(Self.still), "--flicker"] + extra, environment: headlessEnvironment)
            #expect(result.status == 2)
            #expect(result.stderr.contains("--flicker needs the video window"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.path("out.mkv")))
        }
        // With no display the window it needs cannot open: an error, not a run without the flicker.
        let result = try guardPlay([fixture(Self.still), "--flicker"], environment: headlessEnvironment)
        #expect(result.status == 2)
        #expect(result.stderr.contains("--flicker needs the video window, and there is no display"), "\(result.stderr)")
        let unreachable = try guardPlay(
            [fixture(Self.still), "--flicker"], environment: ["DISPLAY": unservedDisplay(in: directory)])
        #expect(unreachable.status == 1, "\(unreachable.stderr)")
    }

    @Test func onlyTheRegionFlickers() throws {
        let directory = try TemporaryDirectory()
        let display = try VirtualDisplay()
        // The left half of the picture flickers; the right half is drawn as usual.
        let player = try FlickeringStill(on: display, in: directory, region: "0,0,160,320")
        let source = try player.source()
        let white = source.pixels.indices.filter { source.pixels[$0] > 128 }
        let left = white.filter { $0 % source.width < 160 }
        let right = white.filter { $0 % source.width >= 160 }
        for _ in 0..<10 {
            let screen = try display.screenshot(in: directory)
            func held(_ pixels: [Int]) -> Double {
                Double(pixels.filter { screen.level(at: $0, of: source, origin: player.origin) >= 215 }.count)
                    / Double(pixels.count)
            }
            #expect(abs(held(left) - 0.5) < 0.05, "the region held \(percent(held(left)))")
            #expect(held(right) == 1, "outside the region only \(percent(held(right))) was drawn")
        }
        _ = try player.stop()
    }

    @Test func aSecondOfRecordingAveragesToThePictureInLinearLight() throws {
        let directory = try TemporaryDirectory()
        let display = try VirtualDisplay()
        let player = try FlickeringStill(on: display, in: directory)
        let source = try player.source()
        // The mean holds only while the recorder takes both phases of most pairs; on a loaded machine
        // x11grab drops frames unevenly, so up to three one-second recordings are made and the best
        // must reach 30 dB (with the flicker drawn wrong every one of them gives about 13 dB). A
        // recording short of 50 frames is such a drop too: it is counted as a failed attempt, and
        // the next one is made.
        var results: [Double] = []
        var shortRecordings: [Int] = []
        for attempt in 0..<3 {
            let recording = directory.path("recording-\(attempt).nut")
            let recorder = try SpawnedProcess(
                [
                    "/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-f", "x11grab", "-draw_mouse", "0", "-framerate",
                    "60",
                    "-i", display.name, "-t", "1", "-vf", "format=gray", "-c:v", "ffv1", "-y", recording,
                ], errors: directory.path("ffmpeg-\(attempt).log"))
            let status = recorder.wait(timeout: 30)
            recorder.end()
            try #require(status == 0, "ffmpeg x11grab failed")
            let frames = try decodeRecording(recording)
            guard frames.count >= 50 else {
                print("flicker: only \(frames.count) x11grab frames in a second at 60 fps; recording again")
                shortRecordings.append(frames.count)
                continue
            }
            var linearSums = [Double](repeating: 0, count: source.pixels.count)
            for frame in frames {
                for index in source.pixels.indices {
                    linearSums[index] += linear(frame.level(at: index, of: source, origin: player.origin))
                }
            }
            var squaredError = 0.0
            for (index, level) in source.pixels.enumerated() {
                let mean = encoded(linearSums[index] / Double(frames.count))
                let expected = encoded(min(linear(level), 0.5))
                squaredError += (mean - expected) * (mean - expected)
            }
            let psnr = 10 * log10(255 * 255 / max(1e-9, squaredError / Double(source.pixels.count)))
            print(
                "flicker: mean of \(frames.count) x11grab frames vs the picture at half-light highlights: PSNR \(psnr) dB"
            )
            results.append(psnr)
            if psnr >= 30 { break }
        }
        let best = results.max() ?? 0
        #expect(
            best >= 30,
            "PSNR of each recording: \(results) dB; frames in those short of 50: \(shortRecordings)")
        _ = try player.stop()
    }
}

/// The player flickering the QR still in a window of `display`, the still looping so it stays up.
private final class FlickeringStill {
    let player: BackgroundPlayer
    let display: VirtualDisplay
    let directory: TemporaryDirectory
    /// Where the picture's top-left pixel is on the screen.
    private(set) var origin = (x: 0, y: 0)

    init(on display: VirtualDisplay, in directory: TemporaryDirectory, region: String? = nil) throws {
        self.display = display
        self.directory = directory
        // No capture source: the screenshot tools would otherwise be seen and the picture masked.
        player = try BackgroundPlayer(
            [
                fixture(FlickerAcceptanceTests.still), region.map { "--flicker=\($0)" } ?? "--flicker", "--loop", "0",
                "--capture-source", "none",
            ],
            environment: ["DISPLAY": display.name, "SDL_AUDIODRIVER": "dummy"], in: directory)
        try #require(ProcessTestSupport.eventually(timeout: 30) { !player.events("start").isEmpty }, "\(player.errors)")
        origin = try windowOrigin()
        let source = try source()
        // Drawn once the screen shows a good share of the picture's white.
        let drawn = ProcessTestSupport.eventually(timeout: 20) {
            guard let screen = try? display.screenshot(in: directory) else { return false }
            let white = source.pixels.indices.filter { source.pixels[$0] > 128 }
            let shown = white.filter { screen.level(at: $0, of: source, origin: self.origin) > 128 }
            return shown.count > white.count / 3
        }
        try #require(drawn, "the flickering picture never appeared: \(player.errors)")
    }

    func source() throws -> GreyPicture { try decodePicture(fixture(FlickerAcceptanceTests.still)) }

    /// The window's position from `xwininfo` (the screen has no window manager, so it stays put).
    private func windowOrigin() throws -> (x: Int, y: Int) {
        let listing = directory.path("xwininfo-\(UUID().uuidString.prefix(8))")
        var text = ""
        let found = ProcessTestSupport.eventually(timeout: 20) {
            guard
                let tool = try? SpawnedProcess(
                    [
                        "/usr/bin/xwininfo", "-display", display.name, "-name",
                        "guard-play: \(FlickerAcceptanceTests.still)",
                    ],
                    output: listing, errors: "/dev/null")
            else { return false }
            let status = tool.wait(timeout: 10)
            tool.end()
            text = (try? String(contentsOfFile: listing, encoding: .utf8)) ?? ""
            return status == 0
        }
        func field(_ name: String) -> Int? {
            text.split(separator: "\n").first { $0.contains(name) }.flatMap {
                Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces))
            }
        }
        guard found, let x = field("Absolute upper-left X"), let y = field("Absolute upper-left Y"),
            field("Width") == 320, field("Height") == 320
        else { throw TestFailure("no 320x320 player window on \(display.name): \(text)") }
        return (x, y)
    }

    /// Asks the player to stop (SIGINT) and returns its `end` event.
    func stop() throws -> [String: Any] {
        player.process.signal(SIGINT)
        try #require(player.process.wait(timeout: 20) != nil, "the player did not stop")
        return try #require(player.events("end").last, "no end event: \(player.errors)")
    }
}

/// The first picture of `path` in grey levels.
private func decodePicture(_ path: String) throws -> GreyPicture {
    var picture: GreyPicture?
    try decodeStream(path, .video) { frame, _, _ in
        if picture == nil { picture = try GreyPicture(frame, time: 0) }
    }
    return try picture ?? { throw TestFailure("\(path) holds no picture") }()
}

extension GreyPicture {
    /// The level on this screen of the picture's pixel `index`, the picture's top-left at `origin`.
    fileprivate func level(at index: Int, of picture: GreyPicture, origin: (x: Int, y: Int)) -> UInt8 {
        let x = origin.x + index % picture.width
        let y = origin.y + index / picture.width
        guard x < width, y < height else { return 0 }
        return pixels[y * width + x]
    }
}

/// sRGB code value to linear light (IEC 61966-2-1), and back (shared with `FlickerPackageTests`).
func linear(_ level: UInt8) -> Double {
    let value = Double(level) / 255
    return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
}

func encoded(_ linear: Double) -> Double {
    let value = min(1, max(0, linear))
    return 255 * (value <= 0.0031308 ? value * 12.92 : 1.055 * pow(value, 1 / 2.4) - 0.055)
}

private func percent(_ share: Double) -> String { "\(Int((share * 100).rounded())) %" }
