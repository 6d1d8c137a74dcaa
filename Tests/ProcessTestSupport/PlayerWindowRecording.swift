import Foundation

/// A screen recording of a player window, the leak the forensic watermark exists for: a stream plays in
/// a window on a private Xvfb screen of the video's size, and a real `ffmpeg -f x11grab` records the
/// window's region into a file, which is then cut to the frames that show a picture.
///
/// The player is `ffplay`, FFmpeg's own player, unless a command is given (`guard-play` with
/// `--capture-source none`, say): GuardPlay's player masks its video while a recorder such as ffmpeg runs
/// (that is the product working), so a recording of it with its detectors on shows the mask. The case the
/// watermark is for is the one the player does not catch — a recorder it does not detect, or a client that
/// does not protect at all — and a player with no capture detection is the honest stand-in for it. The
/// stream is what the gateway serves the session (FFmpeg fetches the playlists, segments and key with the
/// session's token and decrypts), so the recording carries that session's variants.
public struct PlayerWindowRecording {
    /// The recording cut to its picture: from the first frame that is not the black screen to the last.
    public let path: String
    /// The frames of the cut recording.
    public let frames: Int
    /// The cut recording's duration in seconds, by its frame count at the grab rate.
    public var duration: Double { Double(frames) / Double(Self.frameRate) }

    /// The grab rate: the test clips' frame rate.
    public static let frameRate = 30

    /// Plays `url` (a master playlist with the session's token, or a file) in a `width`×`height` window at
    /// the top left of a fresh Xvfb screen of that size, records the screen with x11grab while it plays
    /// (for at most `timeout` seconds), and writes the recording cut to its picture to `path`
    /// (H.264, CRF 18). `directory` holds the raw grab and the tools' logs. `player`, when given, is the
    /// command that plays instead of ffplay: it must open a window that fills the screen (one the size of
    /// the video, which the screen then is) and exit 0 at the end.
    public static func record(
        _ url: String, width: Int, height: Int, to path: String, directory: String, timeout: Double = 120,
        player command: [String]? = nil
    ) throws -> PlayerWindowRecording {
        let display = try VirtualDisplay(width: width, height: height)
        let raw = directory + "/grab.mkv"
        // Lossless, so the only loss between the screen and the file is the final cut's encode.
        let recorder = try SpawnedProcess(
            [
                "/usr/bin/ffmpeg", "-nostdin", "-loglevel", "error", "-f", "x11grab", "-draw_mouse", "0",
                "-framerate", "\(frameRate)", "-video_size", "\(width)x\(height)", "-i", "\(display.name)+0,0",
                "-t", "\(Int(timeout))", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-y", raw,
            ], errors: directory + "/x11grab.log")
        defer { recorder.end() }
        // The grab runs before the window opens, so the recording starts with the black screen.
        guard eventually(timeout: 20, { (try? FileManager.default.attributesOfItem(atPath: raw)) != nil }) else {
            throw SpawnError("x11grab did not start: \(log(directory + "/x11grab.log"))")
        }
        let player = try SpawnedProcess(
            command ?? [
                "/usr/bin/ffplay", "-loglevel", "error", "-autoexit", "-an", "-noborder", "-left", "0", "-top", "0",
                "-x", "\(width)", "-y", "\(height)", url,
            ], environment: ["DISPLAY": display.name, "SDL_VIDEODRIVER": "x11", "SDL_AUDIODRIVER": "dummy"],
            errors: directory + "/player.log")
        defer { player.end() }
        guard let status = player.wait(timeout: timeout), status == 0 else {
            throw SpawnError("the player did not play \(url) to the end: \(log(directory + "/player.log"))")
        }
        // ffmpeg ends a grab on SIGINT by finishing the file (and exits 255, "received signal 2").
        recorder.signal(SIGINT)
        guard recorder.wait(timeout: 30) != nil else {
            throw SpawnError("x11grab did not end on SIGINT: \(log(directory + "/x11grab.log"))")
        }
        let (first, last) = try pictureSpan(raw, width: width, height: height)
        let cut = try runTool(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-loglevel", "error", "-i", raw, "-vf", "trim=start_frame=\(first):end_frame=\(last + 1)",
                "-fps_mode", "passthrough", "-c:v", "libx264", "-crf", "18", "-pix_fmt", "yuv420p", "-y", path,
            ])
        guard cut.status == 0 else { throw SpawnError("cutting the recording failed: \(cut.errors)") }
        return PlayerWindowRecording(path: path, frames: last - first + 1)
    }

    /// The first and last frame of `file` whose mean luma is above the black screen's.
    private static func pictureSpan(_ file: String, width: Int, height: Int) throws -> (Int, Int) {
        let means = try thumbnails(file, width: 16, height: 9).map { $0.reduce(0) { $0 + Int($1) } / $0.count }
        guard let first = means.firstIndex(where: { $0 > 8 }), let last = means.lastIndex(where: { $0 > 8 }) else {
            throw SpawnError("the recording \(file) shows nothing but the black screen")
        }
        return (first, last)
    }

    /// Every frame of `file` as `width`×`height` 8-bit grey levels (FFmpeg's scaler, area averaging), each
    /// once: `-fps_mode passthrough`, as for the cut, or FFmpeg would repeat frames to fill the gaps a
    /// loaded x11grab leaves in its timestamps (one CI run counted 301 frames in a cut of 300).
    public static func thumbnails(_ file: String, width: Int = 32, height: Int = 18) throws -> [[UInt8]] {
        let result = try runTool(
            "/usr/bin/ffmpeg",
            [
                "-nostdin", "-loglevel", "error", "-i", file, "-an", "-vf",
                "scale=\(width):\(height):flags=area,format=gray", "-fps_mode", "passthrough", "-f", "rawvideo", "-",
            ])
        guard result.status == 0 else { throw SpawnError("decoding \(file) failed: \(result.errors)") }
        let size = width * height
        return stride(from: 0, to: result.output.count - size + 1, by: size).map {
            Array(result.output[$0..<$0 + size])
        }
    }

    /// For each frame of `recording`, the source frame it looks most like and their normalized
    /// correlation (−1…1; 0 against a flat picture such as a mask), both as 64×36 thumbnails.
    public static func bestMatches(_ recording: String, source: String) throws -> [(frame: Int, correlation: Double)] {
        let sourceFrames = try thumbnails(source, width: 64, height: 36).map(centred)
        return try thumbnails(recording, width: 64, height: 36).map(centred).map { frame in
            var best = (frame: -1, correlation: -2.0)
            for (index, candidate) in sourceFrames.enumerated() {
                let value = zip(frame, candidate).reduce(0) { $0 + $1.0 * $1.1 }
                if value > best.correlation { best = (index, value) }
            }
            return best
        }
    }

    /// The picture less its mean, scaled to unit length (all zero when flat).
    private static func centred(_ pixels: [UInt8]) -> [Double] {
        let mean = pixels.reduce(0.0) { $0 + Double($1) } / Double(pixels.count)
        let centred = pixels.map { Double($0) - mean }
        let length = centred.reduce(0) { $0 + $1 * $1 }.squareRoot()
        return length < 1e-9 ? centred.map { _ in 0 } : centred.map { $0 / length }
    }

    private static func log(_ path: String) -> String {
        String(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").suffix(800))
    }

    /// Runs a tool to completion with its output in files (no pipe a large output could fill).
    private static func runTool(_ tool: String, _ arguments: [String], timeout: Double = 300) throws -> (
        status: Int32?, output: [UInt8], errors: String
    ) {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("gp-tool-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(atPath: scratch.path + ".out")
            try? FileManager.default.removeItem(atPath: scratch.path + ".err")
        }
        let process = try SpawnedProcess(
            [tool] + arguments, output: scratch.path + ".out", errors: scratch.path + ".err")
        let status = process.wait(timeout: timeout)
        process.end()
        let output = (try? Data(contentsOf: URL(fileURLWithPath: scratch.path + ".out"))).map { [UInt8]($0) } ?? []
        return (status, output, log(scratch.path + ".err"))
    }
}
