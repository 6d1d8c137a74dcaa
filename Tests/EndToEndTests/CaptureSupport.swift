import CaptureDetectors
import Foundation
import MediaCore
import ProcessTestSupport
import Testing

/// No sound card and no display, whatever the machine running the tests has (a `WAYLAND_DISPLAY` left in
/// the environment would give the player a display).
let headlessEnvironment = ["SDL_AUDIODRIVER": "none-such-driver", "DISPLAY": "", "WAYLAND_DISPLAY": ""]

/// A display name no X server answers, now or later: a socket path inside `directory`, where nothing
/// listens (this libxcb does not even take a path for a socket). A number such as `:987` could be taken by
/// another test's Xvfb, which picks free numbers.
func unservedDisplay(in directory: TemporaryDirectory) -> String {
    directory.path("no-x-server") + ":0"
}

extension VirtualDisplay {
    /// The whole screen now, as 8-bit grey levels (`xwd`, decoded by FFmpeg).
    func screenshot(in directory: TemporaryDirectory) throws -> GreyPicture {
        let path = directory.path("screen-\(UUID().uuidString.prefix(8)).xwd")
        let tool = try SpawnedProcess(["/usr/bin/xwd", "-root", "-silent", "-display", name, "-out", path])
        guard tool.wait(timeout: 20) == 0 else {
            tool.end()
            throw TestFailure("xwd failed on \(name)")
        }
        tool.end()
        var picture: GreyPicture?
        try decodeStream(path, .video) { frame, _, _ in picture = try GreyPicture(frame, time: 0) }
        return try picture ?? { throw TestFailure("xwd wrote no picture") }()
    }
}

/// A private PulseAudio daemon with one null sink, on a socket in a fresh folder, so nothing reaches a
/// real sound card and tests running side by side never share a server. Ended with its owner.
final class PrivateSoundServer {
    let directory: TemporaryDirectory
    let process: SpawnedProcess
    /// The null sink everything plays to.
    let sink = "guardplay_null"
    /// The `PULSE_SERVER` value.
    var server: String { "unix:\(directory.path("native"))" }
    /// The environment clients need.
    var environment: [String: String] { ["PULSE_SERVER": server] }

    init() throws {
        directory = try TemporaryDirectory()
        let home = directory.url.path
        process = try SpawnedProcess(
            [
                "/usr/bin/pulseaudio", "--daemonize=no", "--exit-idle-time=-1", "--system=false", "-n",
                "--use-pid-file=false", "--disable-shm=yes", "--load=module-null-sink sink_name=\(sink)",
                "--load=module-native-protocol-unix socket=\(directory.path("native")) auth-anonymous=1",
            ],
            environment: ["HOME": home, "XDG_RUNTIME_DIR": home, "XDG_CONFIG_HOME": home, "PULSE_SERVER": ""],
            errors: directory.path("pulseaudio.log"))
        let server = self.server
        let ready = ProcessTestSupport.eventually(timeout: 20) {
            guard FileManager.default.fileExists(atPath: directory.path("native")),
                let check = try? SpawnedProcess(["/usr/bin/pactl", "--server", server, "info"])
            else { return false }
            defer { check.end() }
            return check.wait(timeout: 5) == 0
        }
        guard ready else {
            let log = (try? String(contentsOfFile: directory.path("pulseaudio.log"), encoding: .utf8)) ?? ""
            process.end()
            throw SpawnError("pulseaudio did not start within 20 s: \(log.suffix(500))")
        }
    }

    /// Starts a raw recording (s16le, 44.1 kHz, stereo) of the null sink's monitor with `tool` (`parec`,
    /// or `pacat` with `--record`).
    func record(with tool: [String], to path: String) throws -> SpawnedProcess {
        try SpawnedProcess(
            tool + [
                "--server", server, "--device", "\(sink).monitor", "--raw", "--format=s16le", "--rate=44100",
                "--channels=2", path,
            ])
    }

    deinit { process.end() }
}

/// A picture as 8-bit grey levels, with the wall-clock time it was taken when known.
struct GreyPicture {
    let time: Double
    let width: Int
    let height: Int
    let pixels: [UInt8]

    /// Converts any decoded picture to grey with libswscale.
    init(_ frame: Frame, time: Double) throws {
        let grey = try Scaler(width: frame.width, height: frame.height, pixelFormat: PixelFormat(name: "gray")!)
            .scale(frame)
        self.time = time
        width = grey.width
        height = grey.height
        pixels = grey.withUnsafeMutablePlanes { planes in
            (0..<planes[0].rows).flatMap { row in planes[0].withRow(row) { Array($0) } }
        }
    }

    /// The share of pixels brighter than `level` (the test clip is mostly bright colour; a black mask on a
    /// black screen is none).
    func brightShare(above level: UInt8 = 40) -> Double {
        Double(pixels.lazy.filter { $0 > level }.count) / Double(max(1, pixels.count))
    }
}

/// Every frame of a recording made with `-copyts` from a live grab, timed in Unix seconds (x11grab stamps
/// frames with the wall clock).
func decodeRecording(_ path: String) throws -> [GreyPicture] {
    var pictures: [GreyPicture] = []
    try decodeStream(path, .video) { frame, info, _ in
        pictures.append(try GreyPicture(frame, time: Double(frame.pts) * info.timeBase.doubleValue))
    }
    return pictures
}

/// Signed 16-bit interleaved stereo samples from a raw recording.
struct RawRecording {
    static let rate = 44_100.0
    let samples: [Int16]

    init(_ path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        samples = data.withUnsafeBytes { raw in Array(raw.bindMemory(to: Int16.self)) }
    }

    /// Seconds recorded.
    var duration: Double { Double(samples.count / 2) / Self.rate }

    /// The loudest sample from `start` seconds on (to `end`, or the end of the recording).
    func peak(from start: Double, to end: Double? = nil) -> Int {
        let first = min(samples.count, Int(start * Self.rate) * 2)
        let last = min(samples.count, end.map { Int($0 * Self.rate) * 2 } ?? samples.count)
        guard first < last else { return 0 }
        return samples[first..<last].lazy.map { abs(Int($0)) }.max() ?? 0
    }

    /// The root mean square of the stretch from `start` to `end` seconds.
    func rms(from start: Double, to end: Double) -> Double {
        let first = min(samples.count, Int(start * Self.rate) * 2)
        let last = min(samples.count, Int(end * Self.rate) * 2)
        guard first < last else { return 0 }
        let sum = samples[first..<last].reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(last - first)).squareRoot()
    }
}

/// A `guard-play` run in the background with its JSON events in a file.
final class BackgroundPlayer {
    let process: SpawnedProcess
    let eventsPath: String
    let errorsPath: String

    init(_ arguments: [String], environment: [String: String], in directory: TemporaryDirectory) throws {
        eventsPath = directory.path("events-\(UUID().uuidString.prefix(8)).jsonl")
        errorsPath = directory.path("stderr-\(UUID().uuidString.prefix(8)).txt")
        process = try SpawnedProcess(
            [guardPlayBinary] + arguments + ["--status", "json"], environment: environment, output: eventsPath,
            errors: errorsPath)
    }

    /// The events written so far (a last line still being written is left out).
    var events: [[String: Any]] {
        guard let text = try? String(contentsOfFile: eventsPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    /// The events named `name`.
    func events(_ name: String) -> [[String: Any]] { events.filter { $0["event"] as? String == name } }

    /// What it wrote to standard error.
    var errors: String { (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? "" }

    deinit { process.end() }
}

/// A recorder list that ignores every built-in recorder and adds `rules`: tests run side by side in one
/// process (SwiftPM runs every test target's suites in parallel), and other test runs share the machine;
/// they start real recorders and stand-ins named like recorders (`CaptureDetectorsTests`), so each player
/// must react only to the recorder its own test starts, told apart by an argument no other has.
func recorderList(adding rules: [String] = [], in directory: TemporaryDirectory) throws -> String {
    let ignored = Set(RecorderRules.builtIn.rules.map(\.name)).sorted().map { "ignore \($0)" }
    let path = directory.path("recorders.conf")
    try (ignored + rules).joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// A recorder rule for `name` that counts only a run with `argument` on its command line (a path in the
/// test's own temporary directory), as `kind` (`screen`, `audio`).
func recorderRule(_ kind: String, _ name: String, whenArgument argument: String) throws -> String {
    // Rule files split words at white space and start comments at '#'.
    guard !argument.contains(where: { $0.isWhitespace || $0 == "#" }) else {
        throw TestFailure("'\(argument)' cannot be a word of a recorder rule")
    }
    return "\(kind) \(name) when-arg \(argument)"
}

/// The first Unix time in `events` of a `protection` event for `output` turning on, or nil.
func protectionOn(_ output: String, in events: [[String: Any]], after: Double) -> Double? {
    events.filter {
        $0["event"] as? String == "protection" && $0["output"] as? String == output && $0["protecting"] as? Bool == true
    }.compactMap { $0["at"] as? Double }.first { $0 >= after - 0.05 }
}

/// Milliseconds, rounded, for reports.
func milliseconds(_ seconds: Double) -> Int { Int((seconds * 1000).rounded()) }
