import Foundation
import Testing

/// `package STILL --flicker`: the QR still packaged (SAMPLE-AES, the test key) as a 60 fps flicker and
/// decoded by FFmpeg's own SAMPLE-AES decryption. Each frame must hold about half of the still's white
/// pixels, the two frames of a pair the complementary halves, and any pair taken together the still;
/// the mask changes at every IDR. The negative control re-encodes the same decoded phases at a low bit
/// rate with x264's defaults (B-frames): the checks then fail, which is what the packager's settings
/// prevent.
///
/// FFmpeg leaves the last access unit of an HLS stream encrypted (its read-ahead gap, see
/// `FFmpegSecondOpinionTests`), so the last frame is not judged.
@Suite(.timeLimit(.minutes(30))) struct FlickerPackageTests {
    /// The still's size, as `media/make-fixtures.sh` makes it.
    static let side = 320

    @Test func aPackagedFlickerStillDecodesToComplementaryHalves() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try package(
            fixture("qr-still.png"), output, ["--flicker", "--still-duration", "2", "--segment-duration", "1"])
        try #require(packaged.status == 0, "\(packaged.stderr)")
        let playlist = try String(contentsOfFile: output + "/video.m3u8", encoding: .utf8)
        #expect(playlist.contains("METHOD=SAMPLE-AES"), "\(playlist)")
        let phases = try decodedGrey(output + "/master.m3u8", options: ["-allowed_extensions", "ALL"], in: directory)
        #expect(phases.count == 120, "2 s at 60 fps, decoded \(phases.count) frames")
        let analysis = try PhaseAnalysis(phases.dropLast(), still: stillPixels())
        print("flicker package: \(analysis)")
        #expect(analysis.heldShares.allSatisfy { $0 >= 0.45 && $0 <= 0.55 }, "\(analysis)")
        #expect(analysis.complementaryShares.allSatisfy { $0 >= 0.98 }, "\(analysis)")
        #expect(analysis.restoredPSNR.allSatisfy { $0 >= 30 }, "\(analysis)")
        // A new mask at the IDR of the second segment (frame 60): its first phase is not the first's.
        let overlap = analysis.overlap(0, 60)
        #expect(overlap > 0.4 && overlap < 0.6, "frames 0 and 60 share \(overlap) of their white pixels")

        // What a screenshot of one frame gives a QR reader: nothing; two opposite phases: the payment.
        let single = directory.path("single.png")
        let restored = directory.path("restored.png")
        try writeGrey(phases[10], to: single, in: directory)
        try writeGrey(zip(phases[10], phases[11]).map { max($0, $1) }, to: restored, in: directory)
        let fromOne = try run("/usr/bin/zbarimg", ["--nodbus", "--raw", "--quiet", single])
        #expect(fromOne.status != 0 && fromOne.stdout.isEmpty, "one phase read as \(fromOne.stdout.debugDescription)")
        let fromPair = try run("/usr/bin/zbarimg", ["--nodbus", "--raw", "--quiet", restored])
        #expect(
            fromPair.stdout == QRStillTests.paymentText + "\n", "a pair read as \(fromPair.stdout.debugDescription)")
    }

    /// The checks above, on the same phases re-encoded at 200 kb/s with x264's defaults: the random mask's
    /// detail is quantised away and the frames decode to a blur of both phases.
    @Test func aLowBitRateReencodeBlursThePhasesAndFailsTheChecks() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("out")
        let packaged = try package(
            fixture("qr-still.png"), output,
            ["--flicker", "--still-duration", "2", "--segment-duration", "1", "--encryption", "none"])
        try #require(packaged.status == 0, "\(packaged.stderr)")
        let blurred = directory.path("blurred.mp4")
        let encoded = try ffmpeg([
            "-i", output + "/master.m3u8", "-c:v", "libx264", "-b:v", "200k", "-threads", "1", blurred,
        ])
        try #require(encoded.status == 0, "\(encoded.stderr)")
        let phases = try decodedGrey(blurred, in: directory)
        try #require(phases.count >= 100, "decoded \(phases.count) frames")
        let analysis = try PhaseAnalysis(phases.dropLast(), still: stillPixels())
        print("flicker package, re-encoded at 200 kb/s: \(analysis)")
        #expect(analysis.heldShares.contains { $0 < 0.45 || $0 > 0.55 }, "\(analysis)")
        #expect(analysis.complementaryShares.contains { $0 < 0.98 }, "\(analysis)")
        #expect(analysis.restoredPSNR.contains { $0 < 30 }, "\(analysis)")
    }

    @Test func flickerIsRefusedForVideoAndForARegionOutsideTheStill() throws {
        let directory = try TemporaryDirectory()
        let video = try package(fixture("clip.mp4"), directory.path("video"), ["--flicker"])
        #expect(video.status == 3)
        #expect(video.stderr.contains("--flicker makes a flickering video of a still image"), "\(video.stderr)")
        let outside = try package(fixture("qr-still.png"), directory.path("outside"), ["--flicker=320,0,10,10"])
        #expect(outside.status == 3)
        #expect(outside.stderr.contains("lies outside the 320×320 still"), "\(outside.stderr)")
        let malformed = try package(fixture("qr-still.png"), directory.path("malformed"), ["--flicker=1,2,3"])
        #expect(malformed.status == 3)
        #expect(malformed.stderr.contains("invalid value '1,2,3' for --flicker"), "\(malformed.stderr)")
        for name in ["video", "outside", "malformed"] {
            #expect(!FileManager.default.fileExists(atPath: directory.path(name)), "\(name) was written")
        }
    }

    /// The still's grey levels.
    private func stillPixels() throws -> [UInt8] {
        var pixels: [UInt8]?
        try decodeStream(fixture("qr-still.png"), .video) { frame, _, _ in
            if pixels == nil { pixels = try GreyPicture(frame, time: 0).pixels }
        }
        return try #require(pixels)
    }

    /// Every frame of `input` as FFmpeg decodes it, in grey levels.
    private func decodedGrey(_ input: String, options: [String] = [], in directory: TemporaryDirectory) throws
        -> [[UInt8]]
    {
        let raw = directory.path("frames-\(UUID().uuidString.prefix(8)).gray")
        let decoded = try ffmpeg(
            options + [
                "-i", input, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", raw,
            ])
        try #require(decoded.status == 0, "\(decoded.stderr)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        let size = Self.side * Self.side
        return stride(from: 0, to: bytes.count - size + 1, by: size).map { Array(bytes[$0..<$0 + size]) }
    }

    private func writeGrey(_ pixels: [UInt8], to path: String, in directory: TemporaryDirectory) throws {
        let raw = directory.path("picture-\(UUID().uuidString.prefix(8)).gray")
        try Data(pixels).write(to: URL(fileURLWithPath: raw))
        let written = try ffmpeg([
            "-f", "rawvideo", "-pix_fmt", "gray", "-s", "\(Self.side)x\(Self.side)", "-i", raw, "-frames:v", "1", path,
        ])
        try #require(written.status == 0, "\(written.stderr)")
    }
}

/// How decoded phases of the black-and-white QR still split its white pixels. A white pixel is held by a
/// frame when it decodes within 40 levels of white (a phase draws white at full scale, so the pair's
/// linear mean is the documented 0.5); a pair is the frames 2k and 2k+1, and restoring it means taking
/// the brighter of the two at each pixel, compared with the still as a phase draws it: each level at
/// twice its linear light, clamped (so white stays white and the QR's grey module edges brighten).
struct PhaseAnalysis: CustomStringConvertible {
    /// Per frame: the share of the still's white pixels it holds.
    let heldShares: [Double]
    /// Per pair: the share of white pixels held by exactly one of its two frames.
    let complementaryShares: [Double]
    /// Per pair: the PSNR in dB of the restored pair against the still as drawn.
    let restoredPSNR: [Double]
    private let held: [Set<Int>]

    init(_ frames: some Collection<[UInt8]>, still: [UInt8]) throws {
        let white = still.indices.filter { still[$0] > 128 }
        guard !white.isEmpty, frames.allSatisfy({ $0.count == still.count }) else {
            throw TestFailure("the frames do not match the still")
        }
        let frames = Array(frames)
        held = frames.map { frame in Set(white.filter { frame[$0] >= 215 }) }
        heldShares = held.map { Double($0.count) / Double(white.count) }
        let drawn = (0...255).map { encoded(2 * linear(UInt8($0))).rounded() }
        var complementary: [Double] = []
        var psnr: [Double] = []
        for first in stride(from: 0, to: frames.count - 1, by: 2) {
            let either = held[first].symmetricDifference(held[first + 1])
            complementary.append(Double(either.count) / Double(white.count))
            var squared = 0.0
            for index in still.indices {
                let difference = Double(max(frames[first][index], frames[first + 1][index])) - drawn[Int(still[index])]
                squared += difference * difference
            }
            psnr.append(10 * log10(255 * 255 / max(1e-9, squared / Double(still.count))))
        }
        complementaryShares = complementary
        restoredPSNR = psnr
    }

    /// The share of frame `a`'s held pixels that frame `b` holds too.
    func overlap(_ a: Int, _ b: Int) -> Double {
        Double(held[a].intersection(held[b]).count) / Double(max(1, held[a].count))
    }

    var description: String {
        func range(_ values: [Double], _ digits: Int) -> String {
            let format = "%.\(digits)f"
            return String(format: format, values.min() ?? .nan) + "–" + String(format: format, values.max() ?? .nan)
        }
        return "\(heldShares.count) frames hold \(range(heldShares, 3)) of the white pixels; "
            + "pairs complementary over \(range(complementaryShares, 3)); restored pairs \(range(restoredPSNR, 1)) dB"
    }
}
