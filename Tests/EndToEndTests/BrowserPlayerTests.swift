import Crypto
import Foundation
import HTTPTestSupport
import ProcessTestSupport
import Testing

/// An RGB picture, 3 bytes a pixel, row by row.
struct RGBPicture {
    let width: Int
    let height: Int
    let pixels: [UInt8]

    /// Decodes a PNG (a screenshot) with the ffmpeg CLI.
    init(png: [UInt8], in directory: TemporaryDirectory, name: String) throws {
        let input = directory.path("\(name).png")
        try Data(png).write(to: URL(fileURLWithPath: input))
        try self.init(decoding: input, options: [], in: directory, name: name)
    }

    /// Frame `index` of `video`, decoded by FFmpeg as the reference. The clip carries no colour tags;
    /// Chromium converts such video to RGB with BT.709's matrix (swscale's default is BT.601, which
    /// gives about 24 dB against Chromium's picture of the very same frame), so the reference does too.
    init(frame index: Int, of video: String, in directory: TemporaryDirectory) throws {
        try self.init(
            decoding: video,
            options: ["-vf", "select=eq(n\\,\(index)),scale=in_color_matrix=bt709", "-frames:v", "1"],
            in: directory, name: "frame-\(index)")
    }

    private init(decoding input: String, options: [String], in directory: TemporaryDirectory, name: String) throws {
        let output = directory.path("\(name).rgb")
        let result = try ffmpeg(["-i", input] + options + ["-f", "rawvideo", "-pix_fmt", "rgb24", output])
        guard result.status == 0 else { throw RawClientError("ffmpeg could not decode \(input): \(result.stderr)") }
        let probe = try run(
            "/usr/bin/ffprobe",
            ["-v", "error", "-select_streams", "v", "-show_entries", "stream=width,height", "-of", "csv=p=0", input])
        let size = probe.stdout.split(whereSeparator: \.isNewline).first?.split(separator: ",").compactMap {
            Int($0)
        }
        guard let size, size.count == 2 else { throw RawClientError("ffprobe gave no size for \(input)") }
        width = size[0]
        height = size[1]
        pixels = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        guard pixels.count == width * height * 3 else { throw RawClientError("\(input): short decode") }
    }

    /// The peak signal-to-noise ratio against `other` of the same size, in dB.
    func psnr(_ other: RGBPicture) -> Double {
        guard other.width == width, other.height == height else { return 0 }
        var squared = 0.0
        for index in pixels.indices {
            let difference = Double(pixels[index]) - Double(other.pixels[index])
            squared += difference * difference
        }
        return 10 * log10(255 * 255 / max(1e-9, squared / Double(pixels.count)))
    }

    /// The share of pixels within `tolerance` of `colour` in every channel.
    func share(of colour: (UInt8, UInt8, UInt8), tolerance: Int = 3) -> Double {
        var matching = 0
        for index in stride(from: 0, to: pixels.count, by: 3) {
            let channels = [(pixels[index], colour.0), (pixels[index + 1], colour.1), (pixels[index + 2], colour.2)]
            if channels.allSatisfy({ abs(Int($0.0) - Int($0.1)) <= tolerance }) { matching += 1 }
        }
        return Double(matching) / Double(width * height)
    }
}

/// The gateway's web player in a real browser: Debian's Chromium, headless, with its own Clear Key CDM
/// decrypting our `cbcs` and `cenc` output through MSE and EME. What is proven comes from the browser
/// itself: the video element's state, its decoded-frame count, and screenshots from Chromium's
/// compositor (canvas readback of EME video gives black in Chromium, even with Clear Key), compared
/// with FFmpeg's decode of the source.
@Suite(.serialized, .timeLimit(.minutes(20)), .enabled(if: Chromium.unavailableReason == nil))
struct BrowserPlayerTests {
    /// The mask's colour (player.css).
    static let mask: (UInt8, UInt8, UInt8) = (16, 20, 24)
    static let kids = ["cbcs": "0a0b0c0d0e0f00010203040506070809", "cenc": "1a1b1c1d1e1f10111213141516171819"]

    /// A gateway serving the clip packaged as fMP4 with `encryption` as asset `fmp4`, with a capture lease
    /// long enough that one report lasts the test.
    struct Served {
        let server: GatewayServer
        let admin: String
        let session: String
        let token: String

        init(encryption: String = "sample-aes", denyKeysWhileCapturing: Bool = false, source: String = "clip.mp4")
            throws
        {
            server = try GatewayServer(["--lease", "600"])
            admin = try server.token("admin")
            let scheme = encryption == "cenc" ? "cenc" : "cbcs"
            let output = server.importRoot + "/fmp4"
            let packaged = try package(
                fixture(source), output,
                ["--container", "fmp4", "--encryption", encryption, "--key-id", BrowserPlayerTests.kids[scheme]!])
            guard packaged.status == 0 else { throw RawClientError("package failed: \(packaged.stderr)") }
            try server.importAsset(
                TestAsset(directory: output, kid: BrowserPlayerTests.kids[scheme]!, key: [UInt8](hex: testKey)!),
                id: "fmp4", token: admin, denyKeysWhileCapturing: denyKeysWhileCapturing)
            (session, token) = try server.session("fmp4", token: admin)
        }

        /// Two periods under two keys, as key rotation gives: the first segment of each track from the clip
        /// packaged under one key, the second from the clip packaged under another, each period with its own
        /// init segment (whose `tenc` names its key ID) and its own EXT-X-KEY.
        init(rotatedWithPolicy denyKeysWhileCapturing: Bool) throws {
            server = try GatewayServer(["--lease", "600"])
            admin = try server.token("admin")
            let root = server.importRoot + "/rotated"
            let periods = [("a", Self.rotationKIDs[0], testKey), ("b", Self.rotationKIDs[1], Self.secondKey)]
            for (name, kid, key) in periods {
                let packaged = try guardPlay(
                    [
                        "package", fixture("clip.mp4"), "--out", root + "/" + name, "--key", key, "--iv", testIV,
                        "--key-id", kid, "--container", "fmp4", "--quiet",
                    ])
                guard packaged.status == 0 else { throw RawClientError("package failed: \(packaged.stderr)") }
            }
            try FileManager.default.copyItem(atPath: root + "/a/master.m3u8", toPath: root + "/master.m3u8")
            for track in ["video", "audio-1"] {
                var playlist = "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n"
                for (index, (name, kid, _)) in periods.enumerated() {
                    playlist += "#EXT-X-MAP:URI=\"\(name)/\(track)_init.mp4\"\n"
                    playlist += "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://\(kid)\"\n"
                    playlist += "#EXTINF:\(index == 0 ? "6.000000" : "4.000000"),\n\(name)/\(track)_0000\(index).m4s\n"
                }
                try (playlist + "#EXT-X-ENDLIST\n").write(
                    toFile: root + "/\(track).m3u8", atomically: true, encoding: .utf8)
            }
            let body = """
                {"directory":"\(root)","denyKeysWhileCapturing":\(denyKeysWhileCapturing),"keys":[
                {"kid":"\(Self.rotationKIDs[0])","key":"\(testKey)"},{"kid":"\(Self.rotationKIDs[1])","key":"\(Self.secondKey)"}]}
                """
            let imported = try server.call("PUT", "/v1/assets/rotated", token: admin, body: body)
            guard imported.status == 201 || imported.status == 200 else {
                throw RawClientError("import failed: \(imported.status) \(imported.text)")
            }
            (session, token) = try server.session("rotated", token: admin)
        }

        static let rotationKIDs = ["2a2b2c2d2e2f20212223242526272829", "3a3b3c3d3e3f30313233343536373839"]
        static let secondKey = "f0e1d2c3b4a5968778695a4b3c2d1e0f"

        init(server: GatewayServer, admin: String, session: String, token: String) {
            self.server = server
            self.admin = admin
            self.session = session
            self.token = token
        }

        var playerURL: String { "http://127.0.0.1:\(server.port)/v1/sessions/\(session)/player?token=\(token)" }

        /// Reports the session's capture state as its client would.
        func report(capturing: Bool, seq: Int) throws {
            let now = ISO8601DateFormatter().string(from: Date())
            let response = try server.call(
                "PUT", "/v1/sessions/\(session)/capture-state?token=\(token)",
                body: #"{"capturing":\#(capturing),"seq":\#(seq),"observedAt":"\#(now)"}"#)
            guard response.status == 200 else { throw RawClientError("report: \(response.status) \(response.text)") }
        }
    }

    func state(_ page: BrowserPage) -> String {
        let value = try? page.evaluate(
            "JSON.stringify({player: window.guardPlay && {status: guardPlay.status, error: guardPlay.error,"
                + " capture: guardPlay.capture, gain: guardPlay.gain, time: guardPlay.time,"
                + " message: guardPlay.message}, currentTime: video.currentTime,"
                + " frames: video.getVideoPlaybackQuality().totalVideoFrames,"
                + " error: video.error && video.error.message})")
        return value as? String ?? "(no state)"
    }

    /// The displayed source frame's PSNR: the best of the frames around the one the playhead names
    /// (a paused compositor may still show its neighbour), and the frame index it was.
    func bestMatch(_ shot: RGBPicture, around index: Int, in directory: TemporaryDirectory) throws -> (Double, Int) {
        var best = (0.0, index)
        for candidate in max(0, index - 2)...(index + 2) {
            let psnr = shot.psnr(try RGBPicture(frame: candidate, of: fixture("clip.mp4"), in: directory))
            if psnr > best.0 { best = (psnr, candidate) }
        }
        return best
    }

    /// A fresh Chromium on the session's player page, after the session's first report (`clear` unless `capturing`).
    func openPlayer(_ served: Served, capturing: Bool = false) throws -> BrowserPage {
        try served.report(capturing: capturing, seq: 1)
        return try Chromium().open(served.playerURL)
    }

    /// Writes a screenshot of the whole player into GUARDPLAY_SCREENSHOTS when it is set
    /// (scripts/web-player-screenshots.sh makes the README's pictures so, from this real run).
    func keepScreenshot(of page: BrowserPage, as name: String) throws {
        guard let directory = ProcessInfo.processInfo.environment["GUARDPLAY_SCREENSHOTS"] else { return }
        try Data(try page.screenshot(of: "main")).write(to: URL(fileURLWithPath: directory + "/" + name))
    }

    @Test(arguments: ["sample-aes", "cenc"])
    func playsTheEncryptedAssetAndShowsTheSourcesFrames(_ encryption: String) throws {
        let served = try Served(encryption: encryption)
        let page = try openPlayer(served)
        let directory = try TemporaryDirectory()
        #expect(
            page.waitFor("window.guardPlay && guardPlay.time > 5", timeout: 60),
            "the playhead did not pass 5 s: \(state(page))")
        let time = try page.number("guardPlay.time")
        let frames = try page.number("video.getVideoPlaybackQuality().totalVideoFrames")
        // 30 frames a second: roughly that many decoded for the time played, none lost to an error.
        #expect(frames >= 0.7 * 30 * time && frames <= 30 * (time + 3), "\(frames) frames in \(time) s")
        #expect(try page.evaluate("video.error === null") as? Bool == true, "\(state(page))")
        #expect(try page.evaluate("guardPlay.capture.state") as? String == "clear")
        // The decrypted sound goes through the page's Web Audio gate, open while clear.
        #expect(page.waitFor("guardPlay.peak > 0.01", timeout: 10), "no sound after the gate while clear")

        try page.evaluate("video.pause()")
        #expect(page.waitFor("video.paused"))
        let paused = try page.number("guardPlay.time")
        // Two animation frames: the compositor has presented the frame the pause left.
        try page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        let shot = try RGBPicture(png: try page.screenshot(of: "#video"), in: directory, name: "paused")
        #expect(shot.width == 640 && shot.height == 360)
        let index = Int((paused * 30).rounded(.down))
        let (psnr, frame) = try bestMatch(shot, around: index, in: directory)
        #expect(psnr >= 35, "paused at \(paused) s (frame \(index)); best PSNR \(psnr) dB at frame \(frame)")
        // The comparison can fail: 1.5 s away the picture differs.
        let distant = shot.psnr(try RGBPicture(frame: index + 45, of: fixture("clip.mp4"), in: directory))
        #expect(distant < psnr - 5, "frame \(index + 45) matches too: \(distant) dB")
        print("browser: \(encryption) paused at \(paused) s, frame \(frame), PSNR \(psnr) dB (distant \(distant) dB)")
    }

    /// The negative control: the same page with a license whose key is wrong (the test answers the
    /// license request itself) gets a decode error from Chromium, and no frame of the source shows.
    @Test func aWrongKeyDoesNotPlay() throws {
        let served = try Served(encryption: "sample-aes")
        try served.report(capturing: false, seq: 1)
        let browser = try Chromium()
        let page = try browser.open("about:blank")
        let wrong = [UInt8](repeating: 0x5A, count: 16)
        let license =
            #"{"keys":[{"kty":"oct","kid":"\#(Data([UInt8](hex: Self.kids["cbcs"]!)!).base64URL)","k":"\#(Data(wrong).base64URL)"}],"type":"temporary"}"#
        try browser.intercept("*/v1/licenses/clearkey*", on: page, with: Array(license.utf8))
        try page.call("Page.navigate", ["url": served.playerURL])
        #expect(
            page.waitFor("window.guardPlay && guardPlay.message.includes('DECODE')", timeout: 60), "\(state(page))")
        #expect(try page.evaluate("video.error && video.error.code") as? Double == 3, "MEDIA_ERR_DECODE")
        #expect(try page.number("guardPlay.time") < 1, "\(state(page))")
        #expect(!browser.events("Fetch.requestPaused", session: page.session).isEmpty, "the license was not asked for")
    }

    @Test func aCaptureMasksThePictureAndMutesUntilItClears() throws {
        let served = try Served()
        let page = try openPlayer(served)
        let directory = try TemporaryDirectory()
        #expect(page.waitFor("window.guardPlay && guardPlay.time > 1 && guardPlay.peak > 0.01", timeout: 60))
        let before = try RGBPicture(png: try page.screenshot(of: "#stage"), in: directory, name: "before")
        #expect(before.share(of: Self.mask) < 0.05, "masked while clear")
        try keepScreenshot(of: page, as: "web-player-playing.png")

        let started = Date()
        try served.report(capturing: true, seq: 2)
        var masked: RGBPicture?
        let maskedInTime = eventually(timeout: 5) {
            guard let shot = try? RGBPicture(png: try page.screenshot(of: "#stage"), in: directory, name: "masked")
            else { return false }
            masked = shot
            return shot.share(of: Self.mask) == 1
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(maskedInTime, "the stage is not only the mask: \(masked.map { $0.share(of: Self.mask) } ?? 0)")
        print("browser: masked \(Int(elapsed * 1000)) ms after the capture report (screenshots included)")
        #expect(page.waitFor("guardPlay.gain === 0 && guardPlay.peak === 0", timeout: 5), "\(state(page))")
        #expect(try page.evaluate("guardPlay.capture.state") as? String == "capturing")
        #expect(try page.evaluate("video.paused") as? Bool == false, "protection never pauses")
        try keepScreenshot(of: page, as: "web-player-masked.png")

        try served.report(capturing: false, seq: 3)
        #expect(page.waitFor("guardPlay.capture.state === 'clear' && guardPlay.peak > 0.01", timeout: 10))
        let after = try RGBPicture(png: try page.screenshot(of: "#stage"), in: directory, name: "after")
        #expect(after.share(of: Self.mask) < 0.05, "still masked after clear")
    }

    @Test func losingTheEventStreamMasksAtOnce() throws {
        let served = try Served()
        let page = try openPlayer(served)
        let directory = try TemporaryDirectory()
        #expect(page.waitFor("window.guardPlay && guardPlay.time > 1 && guardPlay.capture.state === 'clear'"))
        served.server.kill9()
        #expect(page.waitFor("guardPlay.capture.state === 'unknown'", timeout: 10), "\(state(page))")
        #expect(try page.evaluate("guardPlay.capture.source") as? String == "event stream lost")
        let shot = try RGBPicture(png: try page.screenshot(of: "#stage"), in: directory, name: "lost")
        #expect(shot.share(of: Self.mask) == 1)
        #expect(page.waitFor("guardPlay.gain === 0", timeout: 5))
    }

    @Test func aRefusedLicenseSaysWhy() throws {
        let served = try Served(denyKeysWhileCapturing: true)
        let page = try openPlayer(served, capturing: true)
        #expect(page.waitFor("window.guardPlay && guardPlay.error", timeout: 60), "\(state(page))")
        #expect(try page.evaluate("guardPlay.message") as? String == "key refused: a screen capture is active")
        #expect(try page.number("video.getVideoPlaybackQuality().totalVideoFrames") == 0)
    }

    /// Both periods play while clear: the page asks for the second key as it nears the second period.
    @Test func playsAcrossARotatedKey() throws {
        let served = try Served(rotatedWithPolicy: true)
        let page = try openPlayer(served)
        #expect(page.waitFor("window.guardPlay && guardPlay.time > 7.5", timeout: 60), "\(state(page))")
        #expect(try page.evaluate("video.error === null && guardPlay.error === null") as? Bool == true)
        let licenses = try page.number(
            "performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/licenses/')).length")
        #expect(licenses == 2, "one license request per key ID")
    }

    /// A capture that starts during the first period stops playback where the second begins: its key is
    /// asked for only then, and refused under the policy; what was licensed plays out behind the mask.
    @Test func aCaptureDuringARotatedAssetStopsAtTheNextPeriod() throws {
        let served = try Served(rotatedWithPolicy: true)
        let page = try openPlayer(served)
        #expect(page.waitFor("window.guardPlay && guardPlay.time > 0.5", timeout: 60), "\(state(page))")
        try served.report(capturing: true, seq: 2)
        #expect(
            page.waitFor("guardPlay.message === 'key refused: a screen capture is active'", timeout: 30),
            "\(state(page))")
        #expect(try page.evaluate("guardPlay.capture.state") as? String == "capturing")
        // It stalls at the end of the first period (6 s of stream time), never past it.
        #expect(page.waitFor("guardPlay.time > 5.5 && video.readyState < 3", timeout: 30), "\(state(page))")
        #expect(try page.number("guardPlay.time") < 6.1, "\(state(page))")
        #expect(try page.evaluate("video.error === null") as? Bool == true)
    }

    @Test func operatorCommandsAndARevocationActOnThePage() throws {
        let served = try Served()
        let page = try openPlayer(served)
        #expect(page.waitFor("window.guardPlay && guardPlay.time > 0.5", timeout: 60), "\(state(page))")
        func command(_ name: String) throws {
            let response = try served.server.call(
                "POST", "/v1/sessions/\(served.session)/commands", token: served.admin,
                body: #"{"command":"\#(name)"}"#)
            #expect(response.status == 202, "\(response.text)")
        }
        try command("pause")
        #expect(page.waitFor("video.paused"), "\(state(page))")
        let pausedAt = try page.number("guardPlay.time")
        try command("resume")
        #expect(page.waitFor("!video.paused && guardPlay.time > \(pausedAt + 0.5)"), "\(state(page))")
        let revoked = try served.server.call("DELETE", "/v1/sessions/\(served.session)", token: served.admin)
        #expect(revoked.status == 204)
        #expect(
            page.waitFor(
                "guardPlay.message === 'session revoked' && video.paused && guardPlay.capture.state === 'revoked'"),
            "\(state(page))")
        let directory = try TemporaryDirectory()
        let shot = try RGBPicture(png: try page.screenshot(of: "#stage"), in: directory, name: "revoked")
        #expect(shot.share(of: Self.mask) == 1, "a revoked session's picture stays hidden")
    }

    @Test func aTransportStreamAssetSaysItNeedsAnHLSClient() throws {
        let server = try GatewayServer()
        let (admin, _, session, token) = try server.servingClip()
        let served = Served(server: server, admin: admin, session: session, token: token)
        let browser = try Chromium()
        let page = try browser.open(served.playerURL)
        #expect(page.waitFor("window.guardPlay && guardPlay.error", timeout: 60), "\(state(page))")
        let message = try page.evaluate("guardPlay.message") as? String ?? ""
        #expect(message.contains("needs an HLS client"), "\(message)")
    }

    @Test func switchesTheAudioLanguageAndSeeks() throws {
        let served = try Served(encryption: "cenc", source: "dual-audio.mp4")
        let page = try openPlayer(served)
        #expect(page.waitFor("window.guardPlay && guardPlay.time > 0.5", timeout: 60), "\(state(page))")
        #expect(try page.evaluate("document.getElementById('audio').options.length") as? Double == 2)
        try page.evaluate(
            "(() => { const s = document.getElementById('audio'); s.value = '1';"
                + " s.dispatchEvent(new Event('change')); })()")
        #expect(
            page.waitFor(
                "performance.getEntriesByType('resource').some((e) => e.name.includes('audio-2_00000.m4s'))"),
            "the French rendition's segment was not fetched")
        try page.evaluate(
            "(() => { const s = document.getElementById('seek'); s.value = '3';"
                + " s.dispatchEvent(new Event('change')); })()")
        #expect(page.waitFor("guardPlay.time >= 3 && !video.seeking", timeout: 20), "\(state(page))")
        #expect(try page.evaluate("video.error === null") as? Bool == true, "\(state(page))")
    }
}

extension Data {
    /// Base64url without padding, as Clear Key licenses carry key IDs and keys.
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
