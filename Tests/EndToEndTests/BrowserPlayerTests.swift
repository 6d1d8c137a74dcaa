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
@Suite(.serialized, .timeLimit(.minutes(30)), .enabled(if: Chromium.unavailableReason == nil))
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

        init(
            encryption: String = "sample-aes", denyKeysWhileCapturing: Bool = false, source: String = "clip.mp4",
            arguments: [String] = []
        ) throws {
            server = try GatewayServer(["--lease", "600"] + arguments)
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

        /// One 40 s picture as several video renditions, H.264 at each of `renditions`' bit rates (all
        /// 640×360 under one encoder's settings, a keyframe every second, so their 1 s segments line up and
        /// share a codec string), each packaged on its own under one key in a folder of its name and all
        /// named by one master playlist. Noise keeps the picture from compressing below the rate asked for.
        init(renditions: [(name: String, kbps: Int)]) throws {
            server = try GatewayServer(["--lease", "600"])
            admin = try server.token("admin")
            let root = server.importRoot + "/ladder"
            let sources = try TemporaryDirectory()
            var master = "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-INDEPENDENT-SEGMENTS\n"
            for (name, kbps) in renditions {
                let source = sources.path("\(name).mp4")
                let encoded = try ffmpeg(
                    [
                        "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=40", "-vf", "noise=alls=24:allf=t",
                        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-b:v", "\(kbps)k",
                        "-maxrate", "\(kbps)k", "-bufsize", "\(kbps)k", "-g", "30", "-keyint_min", "30",
                        "-sc_threshold", "0", source,
                    ], timeout: 300)
                guard encoded.status == 0 else { throw RawClientError("ffmpeg failed: \(encoded.stderr)") }
                let packaged = try package(
                    source, root + "/" + name,
                    ["--container", "fmp4", "--key-id", BrowserPlayerTests.kids["cbcs"]!, "--segment-duration", "1"])
                guard packaged.status == 0 else { throw RawClientError("package failed: \(packaged.stderr)") }
                // The packager's variant, its URI under the rendition's folder.
                let lines = try String(contentsOfFile: root + "/\(name)/master.m3u8", encoding: .utf8)
                    .split(whereSeparator: \.isNewline)
                guard let info = lines.firstIndex(where: { $0.hasPrefix("#EXT-X-STREAM-INF:") }), info + 1 < lines.count
                else { throw RawClientError("\(name)'s master playlist names no variant") }
                master += "\(lines[info])\n\(name)/\(lines[info + 1])\n"
            }
            try master.write(toFile: root + "/master.m3u8", atomically: true, encoding: .utf8)
            try server.importAsset(
                TestAsset(directory: root, kid: BrowserPlayerTests.kids["cbcs"]!, key: [UInt8](hex: testKey)!),
                id: "ladder", token: admin)
            (session, token) = try server.session("ladder", token: admin)
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

        // The bound is measured on one clock, the machine's: the page notes by Date.now when it applied
        // the mask, when the frame with it was out, and when the gain reached 0; the test, when the
        // report's answer came. The polling below only reads those notes, so it adds nothing to them.
        let sent = Date().timeIntervalSince1970 * 1000
        try served.report(capturing: true, seq: 2)
        let answered = Date().timeIntervalSince1970 * 1000
        let noted = "guardPlay.protectedAt && guardPlay.protectedAt.state === 'capturing'"
        #expect(
            page.waitFor("\(noted) && guardPlay.protectedAt.shown !== null && guardPlay.protectedAt.muted !== null"),
            "\(state(page))")
        let applied = try page.number("guardPlay.protectedAt.applied") - answered
        let shown = try page.number("guardPlay.protectedAt.shown") - answered
        let muted = try page.number("guardPlay.protectedAt.muted") - answered
        print(
            "browser: the report took \(Int(answered - sent)) ms; after its answer the mask was applied at"
                + " \(Int(applied)) ms, shown at \(Int(shown)) ms, the gain 0 at \(Int(muted)) ms")
        #expect(shown <= 500 && muted <= 500, "mask shown \(shown) ms, gain 0 \(muted) ms after the report's answer")
        // And what shows is only the mask, with silence after the gate.
        let masked = try RGBPicture(png: try page.screenshot(of: "#stage"), in: directory, name: "masked")
        #expect(masked.share(of: Self.mask) == 1, "the stage is not only the mask: \(masked.share(of: Self.mask))")
        #expect(try page.number("guardPlay.gain") == 0, "\(state(page))")
        #expect(page.waitFor("guardPlay.peak === 0", timeout: 5), "\(state(page))")
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

    /// A dropped event stream (the gateway killed and started again on its port, its SQLite store
    /// kept) masks the page; the EventSource's own reconnection sends `Last-Event-ID`, and the page gets
    /// the changes it missed, each with its ID, rather than a stream opened afresh. The reconnection is
    /// held in Chromium (the DevTools Fetch domain) until the changes are made, so they are missed ones.
    @Test func reconnectsWithLastEventIDAndGetsTheChangesItMissed() throws {
        let served = try Served(arguments: ["--listen", "127.0.0.1:\(try freePort())"])
        let page = try openPlayer(served)
        try page.call("Network.enable")
        // Everything fetched, so the gateway's absence below only drops the event stream.
        #expect(
            page.waitFor("window.guardPlay && guardPlay.loaded && guardPlay.capture.state === 'clear'", timeout: 60),
            "\(state(page))")
        try served.report(capturing: true, seq: 2)
        #expect(page.waitFor("guardPlay.capture.state === 'capturing'"), "\(state(page))")
        try served.report(capturing: false, seq: 3)
        #expect(page.waitFor("guardPlay.capture.state === 'clear'"), "\(state(page))")
        let seen = try page.number("guardPlay.received.length")
        #expect(try page.evaluate("guardPlay.received.at(-1).lastEventId") as? String == "3", "\(state(page))")

        try page.call("Fetch.enable", ["patterns": [["urlPattern": "*/events?*", "requestStage": "Request"]]])
        served.server.kill9()
        #expect(
            page.waitFor("guardPlay.capture.state === 'unknown' && guardPlay.capture.source === 'event stream lost'"),
            "\(state(page))")
        try served.server.start()
        // What happens while the page is away: a capture, then clear again.
        try served.report(capturing: true, seq: 4)
        try served.report(capturing: false, seq: 5)
        var held: [String: Any] = [:]
        #expect(
            eventually(timeout: 30) {
                let paused = page.browser.events("Fetch.requestPaused", session: page.session)
                held = paused.last?["params"] as? [String: Any] ?? [:]
                return !held.isEmpty
            }, "the page did not reconnect")
        // It is EventSource's own reconnection, not a new EventSource the page made.
        #expect(try page.evaluate("guardPlay.streamState") as? Double == 0, "CONNECTING")
        try page.call("Fetch.continueRequest", ["requestId": held["requestId"] as? String ?? ""])
        try page.call("Fetch.disable")
        #expect(page.waitFor("guardPlay.capture.state === 'clear'", timeout: 30), "\(state(page))")
        let missed = try page.evaluate(
            "JSON.stringify(guardPlay.received.slice(\(Int(seen))).map((e) => [e.state, e.lastEventId]))")
        #expect(missed as? String == #"[["capturing","4"],["clear","5"]]"#, "\(state(page))")
        // The fields that went out on the wire (the Fetch domain's copy of the request leaves some
        // out, Last-Event-ID among them) named the last ID the page had.
        let sent = page.browser.events("Network.requestWillBeSentExtraInfo", session: page.session).compactMap {
            ($0["params"] as? [String: Any])?["headers"] as? [String: Any]
        }
        let named = sent.compactMap { headers in
            headers.first { $0.key.lowercased() == "last-event-id" }?.value as? String
        }
        #expect(named == ["3"], "Last-Event-ID on the wire: \(named)")
    }

    /// The player on a page of another origin (a second loopback server): its module, playlists,
    /// segments, license and events all come from the gateway's origin. It plays with `--cors-origin`
    /// naming that origin; without the option the browser refuses the gateway's answers and nothing
    /// plays.
    @Test(arguments: [true, false]) func playsOnAPageOfAnotherOriginOnlyWithTheCORSOption(_ allowed: Bool) throws {
        let site = try StaticSite()
        let served = try Served(encryption: "cenc", arguments: allowed ? ["--cors-origin", site.origin] : [])
        try served.report(capturing: false, seq: 1)
        let gateway = "http://127.0.0.1:\(served.server.port)"
        // The gateway's own page, its paths made absolute on the gateway's origin, and a note in the
        // title when the module cannot be loaded.
        let own = try served.server.call("GET", "/v1/sessions/\(served.session)/player?token=\(served.token)")
        #expect(own.status == 200)
        let hosted = own.text.replacingOccurrences(of: "\"/v1/", with: "\"\(gateway)/v1/").replacingOccurrences(
            of: "<script type=\"module\"",
            with: "<script onerror=\"document.title = 'the player did not load'\" type=\"module\"")
        #expect(hosted.contains("src=\"\(gateway)/v1/web-player/main.js\""))
        try site.write(hosted, as: "host.html")
        let page = try Chromium().open("\(site.origin)/host.html?token=\(served.token)")
        if allowed {
            #expect(page.waitFor("window.guardPlay && guardPlay.time > 3", timeout: 60), "\(state(page))")
            #expect(try page.evaluate("video.error === null && guardPlay.error === null") as? Bool == true)
            #expect(try page.evaluate("location.origin") as? String == site.origin)
            let fromGateway = try page.number(
                "performance.getEntriesByType('resource').filter((e) => e.name.startsWith('\(gateway)/')"
                    + " && e.name.includes('.m4s')).length")
            #expect(fromGateway >= 2, "segments came from the gateway's origin")
            #expect(try page.evaluate("guardPlay.capture.state") as? String == "clear", "the event stream works too")
        } else {
            #expect(page.waitFor("document.title === 'the player did not load'"), "\(state(page))")
            #expect(try page.evaluate("typeof window.guardPlay") as? String == "undefined")
            #expect(try page.number("video.currentTime") == 0)
        }
    }

    /// With two video renditions, the page goes by the throughput it measures: on the loopback network
    /// it moves up from the lowest to the highest after its first segment; with Chromium's network
    /// throttled below the higher one's bandwidth, it comes down to the lower one.
    @Test func choosesTheVideoRenditionByMeasuredThroughput() throws {
        let served = try Served(renditions: [("low", 200), ("high", 2500)])
        let page = try openPlayer(served)
        try page.call("Network.enable")
        func segments(_ rendition: String) -> String {
            "performance.getEntriesByType('resource').filter((e) => e.name.includes('/ladder/\(rendition)/')"
                + " && e.name.includes('.m4s'))"
        }
        #expect(
            page.waitFor("window.guardPlay && guardPlay.time > 1 && \(segments("high")).length >= 3", timeout: 90),
            "\(state(page))")
        #expect(try page.evaluate("guardPlay.variant.url.includes('/ladder/high/')") as? Bool == true)
        let high = try page.number("guardPlay.variant.bandwidth")
        // 60 kB/s: 480 kbit/s, below the higher rendition's bandwidth and well above the lower's.
        try page.call(
            "Network.emulateNetworkConditions",
            ["offline": false, "latency": 0, "downloadThroughput": 60_000, "uploadThroughput": -1])
        let throttled = try page.number("performance.now()")
        #expect(
            page.waitFor("\(segments("low")).some((e) => e.startTime > \(throttled))", timeout: 90), "\(state(page))")
        #expect(try page.evaluate("guardPlay.variant.url.includes('/ladder/low/')") as? Bool == true)
        let low = try page.number("guardPlay.variant.bandwidth")
        #expect(low < 480_000 && high > 480_000, "bandwidths \(low) and \(high)")
        // One slow segment of the higher rendition is enough (another may have started before the switch).
        let slowHigh = try page.number("\(segments("high")).filter((e) => e.startTime > \(throttled)).length")
        #expect(slowHigh <= 2, "\(slowHigh) segments of the higher rendition after throttling")
        #expect(try page.evaluate("video.error === null && guardPlay.error === null") as? Bool == true)
        print("browser: throughput after throttling \(try page.number("guardPlay.throughput")) bit/s")
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
