import Foundation
import ProcessTestSupport
import Testing

/// Issue 9 §4: a header claiming a huge picture is refused before any decoder allocates for it, by the
/// packager (exit 16), `verify --source` (16) and the player (18), and the memory each uses stays small.
@Suite(.hangGuard) struct PictureLimitTests {
    /// Far below the 2.3 GB (package, verify) and 3.6 GB (player to .mkv) today's code reached.
    static let memoryBound = 500 << 20

    /// Runs guard-play under GNU time and returns its exit status, standard error and peak RSS.
    ///
    /// The child's own `ru_maxrss` cannot serve: Linux carries the high-water mark of the process that
    /// forked it across `exec`, so a direct child of the test runner (hundreds of MiB while the suites
    /// run in parallel) reports at least the runner's size. GNU time is small when it forks guard-play,
    /// so its `%M` is guard-play's own peak.
    func measured(_ arguments: [String], in directory: TemporaryDirectory) throws -> (
        status: Int32, stderr: String, peak: Int
    ) {
        let errors = directory.path("stderr-\(UUID().uuidString)")
        let report = directory.path("time-\(UUID().uuidString)")
        let child = try SpawnedProcess(
            ["/usr/bin/time", "--quiet", "-f", "%M", "-o", report, guardPlayBinary] + arguments, errors: errors)
        let status = try #require(child.wait(timeout: 120), "guard-play \(arguments) did not end")
        let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        let kilobytes = try #require(
            text.split(separator: "\n").last.flatMap { Int($0) }, "GNU time reported '\(text)'")
        return (status, stderr, kilobytes * 1024)
    }

    /// A 16000×16000 SPS over 25 tiny frames, in an MP4.
    func hugeMP4(in directory: TemporaryDirectory, width: Int = 16000, height: Int = 16000) throws -> String {
        let small = directory.path("small.mp4")
        if !FileManager.default.fileExists(atPath: small) { try HostileHeaders.smallH264(small) }
        let path = directory.path("claims-\(width)x\(height).mp4")
        let bytes = try HostileHeaders.resizedMP4(small, width: width, height: height)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    @Test func packageRefusesAHugeSPSInBoundedMemory() throws {
        let directory = try TemporaryDirectory()
        let input = try hugeMP4(in: directory)
        let out = directory.path("out")
        let result = try measured(["package", input, "--out", out, "--encryption", "none"], in: directory)
        #expect(result.status == 16, "\(result.stderr)")
        #expect(result.stderr.contains("16000×16000") && result.stderr.contains("--max-pixels"), "\(result.stderr)")
        #expect(result.peak < Self.memoryBound, "peak RSS \(result.peak >> 20) MiB")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// The gateway runs `PackagingJob` in its own process: the same limit keeps a hostile upload from
    /// growing the server (read from its VmHWM while it still runs).
    @Test func gatewayJobsRefuseAHugeSPSInBoundedMemory() throws {
        let directory = try TemporaryDirectory()
        let input = try hugeMP4(in: directory)
        let server = try GatewayServer()
        try FileManager.default.copyItem(atPath: input, toPath: server.inputRoot + "/huge.mp4")
        let admin = try server.token("package")
        let job = try server.submitJob(token: admin, input: "huge.mp4", asset: "huge")
        let failed = try server.pollJob(job, token: admin, timeout: 60) { $0["state"] as? String == "failed" }
        let error = failed?["error"] as? String ?? ""
        #expect(error.contains("16000×16000"), "\(String(describing: failed))")
        let pid = try #require(server.process?.pid)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        let kilobytes = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        #expect(kilobytes * 1024 < Self.memoryBound, "gateway peak RSS \(kilobytes >> 10) MiB")
    }

    @Test func verifyRefusesAHugeSourceInBoundedMemory() throws {
        let directory = try TemporaryDirectory()
        let input = try hugeMP4(in: directory)
        let out = directory.path("out")
        let packaged = try guardPlay(["package", directory.path("small.mp4"), "--out", out, "--encryption", "none"])
        try #require(packaged.status == 0, "\(packaged.stderr)")
        let result = try measured(["verify", out, "--source", input], in: directory)
        #expect(result.status == 16, "\(result.stderr)")
        #expect(result.stderr.contains("16000×16000"), "\(result.stderr)")
        #expect(result.peak < Self.memoryBound, "peak RSS \(result.peak >> 20) MiB")
    }

    @Test(arguments: ["mkv", "mp4"])
    func playerRefusesAHugeSPSInBoundedMemory(_ container: String) throws {
        let directory = try TemporaryDirectory()
        let input = try hugeMP4(in: directory)
        let out = directory.path("out.\(container)")
        let result = try measured([input, "--output", out, "--status", "none"], in: directory)
        #expect(result.status == 18, "\(result.stderr)")
        #expect(result.stderr.contains("16000×16000") && result.stderr.contains("--max-pixels"), "\(result.stderr)")
        #expect(result.peak < Self.memoryBound, "peak RSS \(result.peak >> 20) MiB")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// 65536×65536 is more than FFmpeg itself accepts, so it reports a size of 0×0: the packager used to
    /// publish `RESOLUTION=0x0` (and verify passed it), and the player said the output could not be
    /// written (20).
    @Test func aSizeFFmpegRefusesIsRefusedAndNotPublished() throws {
        let directory = try TemporaryDirectory()
        let input = try hugeMP4(in: directory, width: 65536, height: 65536)
        let out = directory.path("out")
        let packaged = try guardPlay(["package", input, "--out", out, "--encryption", "none"])
        #expect(packaged.status == 16, "\(packaged.stderr)")
        #expect(packaged.stderr.contains("65536×65536"), "\(packaged.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let played = try guardPlay([input, "--output", directory.path("out.mkv"), "--status", "none"])
        #expect(played.status == 18, "\(played.stderr)")
        #expect(played.stderr.contains("not one of 25 video packets decodes"), "\(played.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("out.mkv")))
    }

    @Test func aPNGClaiming65535SquaredIsAnInputProblemNotAnOutputOne() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("huge.png")
        #expect(
            FileManager.default.createFile(
                atPath: input, contents: Data(try HostileHeaders.resizedPNG(width: 65535, height: 65535))))
        let played = try guardPlay([input, "--output", directory.path("out.mkv"), "--status", "none"])
        #expect(played.status == 18, "\(played.stderr)")
        #expect(played.stderr.contains("picture size cannot be decoded"), "\(played.stderr)")
        let packaged = try guardPlay(["package", input, "--out", directory.path("out"), "--encryption", "none"])
        #expect(packaged.status == 16, "\(packaged.stderr)")
    }

    /// An SPS that changes in band to 16000×16000 after a 64×64 start: FFmpeg probes only the first, so
    /// the packager reads every new SPS itself.
    @Test func anInBandSPSOverTheLimitIsRefused() throws {
        let directory = try TemporaryDirectory()
        let small = directory.path("small.h264")
        try HostileHeaders.smallH264(small)
        let both =
            [UInt8](try Data(contentsOf: URL(fileURLWithPath: small)))
            + (try HostileHeaders.resizedAnnexB(small, width: 16000, height: 16000))
        let input = directory.path("changes.h264")
        #expect(FileManager.default.createFile(atPath: input, contents: Data(both)))
        let out = directory.path("out")
        let result = try measured(["package", input, "--out", out, "--encryption", "none"], in: directory)
        #expect(result.status == 16, "\(result.stderr)")
        #expect(result.stderr.contains("SPS") && result.stderr.contains("16000×16000"), "\(result.stderr)")
        #expect(result.peak < Self.memoryBound, "peak RSS \(result.peak >> 20) MiB")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func maxPixelsSetsTheLimitOnEveryCommand() throws {
        let directory = try TemporaryDirectory()
        let small = directory.path("small.mp4")
        try HostileHeaders.smallH264(small)
        let lowered = try guardPlay(["package", small, "--out", directory.path("a"), "--max-pixels", "32x32"])
        #expect(lowered.status == 16, "\(lowered.stderr)")
        #expect(lowered.stderr.contains("64×64"), "\(lowered.stderr)")
        let exact = try guardPlay(["package", small, "--out", directory.path("b"), "--max-pixels", "4096", "--quiet"])
        #expect(exact.status == 0, "\(exact.stderr)")
        let verified = try guardPlay(["verify", directory.path("b"), "--source", small, "--max-pixels", "1024"])
        #expect(verified.status == 16, "\(verified.stderr)")
        let played = try guardPlay([small, "--output", directory.path("o.mkv"), "--max-pixels", "1024"])
        #expect(played.status == 18, "\(played.stderr)")
        for bad in ["0", "abc", "99999x99999"] {
            let refused = try guardPlay([small, "--output", directory.path("o.mkv"), "--max-pixels", bad])
            #expect(refused.status == 3, "--max-pixels \(bad): \(refused.stderr)")
        }
    }

    @Test func verifyFlagsAResolutionOfZero() throws {
        let directory = try TemporaryDirectory()
        let small = directory.path("small.mp4")
        try HostileHeaders.smallH264(small)
        let out = directory.path("out")
        let packaged = try guardPlay(["package", small, "--out", out, "--encryption", "none", "--quiet"])
        try #require(packaged.status == 0, "\(packaged.stderr)")
        let master = out + "/master.m3u8"
        let text = try String(contentsOfFile: master, encoding: .utf8)
        try #require(text.contains("RESOLUTION=64x64"))
        try text.replacingOccurrences(of: "RESOLUTION=64x64", with: "RESOLUTION=0x0")
            .write(toFile: master, atomically: true, encoding: .utf8)
        let verified = try guardPlay(["verify", out])
        #expect(verified.status == 31, "\(verified.stdout)")
        #expect(verified.stdout.contains("RESOLUTION=0x0"), "\(verified.stdout)")
    }
}
