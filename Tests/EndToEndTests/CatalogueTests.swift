import Foundation
import Testing

/// `guard-play catalogue`, the pipeline media teams run in CI: it packages and verifies every file under a
/// directory, reports each as JSON and JUnit, keeps keys out of the published tree, fails the run on any
/// file that does not make it, and gives the same results with files run in parallel.
@Suite(.timeLimit(.minutes(30))) struct CatalogueTests {
    /// Two good fixtures (one in a subdirectory), a truncated MP4 and a text note.
    private func makeMedia(in directory: TemporaryDirectory) throws -> String {
        let media = directory.path("media")
        try FileManager.default.createDirectory(atPath: media + "/sub", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture("song.m4a"), toPath: media + "/song.m4a")
        try FileManager.default.copyItem(atPath: fixture("video-only.mp4"), toPath: media + "/sub/video-only.mp4")
        let whole = try Data(contentsOf: URL(fileURLWithPath: fixture("clip.mp4")))
        _ = FileManager.default.createFile(atPath: media + "/cut.mp4", contents: whole.prefix(whole.count / 2))
        _ = FileManager.default.createFile(atPath: media + "/notes", contents: Data("not media\n".utf8))
        return media
    }

    /// Each file's status and exit code in the JSON report, by file.
    private func statuses(_ reportPath: String) throws -> [String: String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: reportPath))
        let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let files = try #require(report["files"] as? [[String: Any]])
        var result: [String: String] = [:]
        for file in files {
            let name = try #require(file["file"] as? String)
            result[name] = "\(file["status"] ?? "") \(file["exitCode"] ?? "")"
            #expect(file["packageSeconds"] is Double && file["verifySeconds"] is Double)
        }
        return result
    }

    /// The JUnit file read by Python's XML parser: suite counts, then one "name outcome message" per case.
    private func junit(_ path: String) throws -> [String] {
        let script = """
            import sys, xml.etree.ElementTree as T
            s = T.parse(sys.argv[1]).getroot().find('testsuite')
            print(s.get('tests'), s.get('failures'), s.get('skipped'))
            for c in s.findall('testcase'):
                f = c.find('failure'); k = c.find('skipped')
                print(c.get('name'), 'failure' if f is not None else 'skipped' if k is not None else 'passed',
                      (f if f is not None else k).get('message') if (f is not None or k is not None) else '')
            """
        let parsed = try run("/usr/bin/python3", ["-c", script, path])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        return parsed.stdout.split(separator: "\n").map(String.init)
    }

    private let expected = [
        "cut.mp4": "failed 14", "notes": "skipped 12", "song.m4a": "passed 0", "sub/video-only.mp4": "passed 0",
    ]

    @Test func packagesVerifiesAndReportsEachFileAndFailsOnTheCorruptOne() throws {
        let directory = try TemporaryDirectory()
        let media = try makeMedia(in: directory)
        let out = directory.path("out")
        let result = try guardPlay([
            "catalogue", media, "--out", out, "--report", directory.path("report.json"), "--junit",
            directory.path("junit.xml"),
        ])
        #expect(result.status == 40, "\(result.stdout)\(result.stderr)")
        // Piped: one line per file, in order, then the total; no progress bar.
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(result.stdout)")
        #expect(lines.first?.hasPrefix("FAILED  cut.mp4") == true && lines.first?.contains("cut short") == true)
        #expect(lines.contains { $0.hasPrefix("skipped notes") && $0.contains("text, not media") })
        #expect(lines.contains("ok      song.m4a            OK: every access unit equals the source"))
        #expect(lines.contains("ok      sub/video-only.mp4  OK: every access unit equals the source"))
        #expect(lines.last?.hasPrefix("catalogue: 2 of 3 files packaged and verified, 1 skipped") == true)
        #expect(!result.stderr.contains("\r") && !result.stdout.contains("\r"))

        #expect(try statuses(directory.path("report.json")) == expected)
        let cases = try junit(directory.path("junit.xml"))
        #expect(cases.first == "4 1 1")
        #expect(cases.contains { $0.hasPrefix("cut.mp4 failure input ") && $0.contains("cut short") })
        #expect(cases.contains("song.m4a passed ") && cases.contains("sub/video-only.mp4 passed "))
        #expect(cases.contains { $0.hasPrefix("notes skipped ") })

        // Keys beside the published tree, never in it; outputs under their relative paths.
        let published = try FileManager.default.subpathsOfDirectory(atPath: out + "/hls")
        #expect(published.contains("sub/video-only/master.m3u8") && published.contains("song/master.m3u8"))
        #expect(!published.contains { $0.hasSuffix(".key") })
        let key = try FileManager.default.attributesOfItem(atPath: out + "/keys/song.key")
        #expect((key[.posixPermissions] as? Int) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: out + "/hls/cut"))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(leftovers.sorted() == ["junit.xml", "media", "out", "report.json"], "written aside, renamed")
    }

    /// Both containers' runs, as `make catalogue` makes them: by default HEVC goes to fMP4 and the rest to
    /// TS; with `--container fmp4` everything is packaged in fMP4, AC-3 too; with `--container ts`, HEVC
    /// is skipped with the reason. Each packaged file is verified against its source.
    @Test func packagesEachFixtureInBothContainersAndSkipsWhatOneCannotCarry() throws {
        let directory = try TemporaryDirectory()
        let media = directory.path("media")
        try FileManager.default.createDirectory(atPath: media, withIntermediateDirectories: true)
        for name in ["hevc-mkv.mkv", "clip-ac3.mp4", "video-only.mp4"] {
            try FileManager.default.copyItem(atPath: fixture(name), toPath: media + "/" + name)
        }
        for (container, expected) in [
            (nil, ["clip-ac3.mp4": "passed 0", "hevc-mkv.mkv": "passed 0", "video-only.mp4": "passed 0"]),
            ("fmp4", ["clip-ac3.mp4": "passed 0", "hevc-mkv.mkv": "passed 0", "video-only.mp4": "passed 0"]),
            ("ts", ["clip-ac3.mp4": "passed 0", "hevc-mkv.mkv": "skipped 16", "video-only.mp4": "passed 0"]),
        ] {
            let out = directory.path("out-\(container ?? "default")")
            let report = out + ".json"
            let result = try guardPlay(
                ["catalogue", media, "--out", out, "--report", report] + (container.map { ["--container", $0] } ?? []))
            #expect(result.status == 0, "\(container ?? "default"): \(result.stdout)\(result.stderr)")
            #expect(try statuses(report) == expected, "\(container ?? "default")")
            let skipped = result.stdout.split(separator: "\n").filter { $0.hasPrefix("skipped") }
            #expect(skipped.allSatisfy { $0.contains("--container") }, "\(skipped)")
            if container != "ts" {
                let map = try String(contentsOfFile: out + "/hls/hevc-mkv/video.m3u8", encoding: .utf8)
                #expect(map.contains("#EXT-X-MAP:URI=\"video_init.mp4\""))
            }
        }
    }

    @Test func parallelJobsGiveTheSameResults() throws {
        let directory = try TemporaryDirectory()
        let media = try makeMedia(in: directory)
        let serial = try guardPlay([
            "catalogue", media, "--out", directory.path("one"), "--report", directory.path("one.json"),
        ])
        let parallel = try guardPlay([
            "catalogue", media, "--out", directory.path("two"), "--report", directory.path("two.json"), "--jobs",
            "2",
        ])
        #expect(serial.status == 40 && parallel.status == 40)
        #expect(try statuses(directory.path("two.json")) == expected)
        #expect(try statuses(directory.path("one.json")) == statuses(directory.path("two.json")))
        let perFile = { (text: String) in Set(text.split(separator: "\n").filter { !$0.hasPrefix("catalogue:") }) }
        #expect(perFile(serial.stdout) == perFile(parallel.stdout) && perFile(serial.stdout).count == 4)
    }

    @Test func refusesAnOutThatIsHoldsOrLiesInTheDirectory() throws {
        let directory = try TemporaryDirectory()
        let media = try makeMedia(in: directory)
        try FileManager.default.createSymbolicLink(atPath: directory.path("link"), withDestinationPath: media)
        let before = try FileManager.default.subpathsOfDirectory(atPath: media).sorted()
        for out in [media, directory.url.path, media + "/out", directory.path("link") + "/out"] {
            let result = try guardPlay(["catalogue", media, "--out", out])
            #expect(result.status == 2, "\(out): \(result.stderr)")
            #expect(result.stderr.contains("overlap"), "\(result.stderr)")
        }
        let report = try guardPlay(["catalogue", media, "--out", directory.path("o"), "--report", media + "/r.json"])
        #expect(report.status == 2 && report.stderr.contains("among the inputs"), "\(report.stderr)")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: media).sorted() == before)
        #expect(!FileManager.default.fileExists(atPath: directory.path("o")))

        let empty = directory.path("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let none = try guardPlay(["catalogue", empty, "--out", directory.path("o")])
        #expect(none.status == 10 && none.stderr.contains("no media file"), "\(none.stderr)")
        let jobs = try guardPlay(["catalogue", media, "--out", directory.path("o"), "--jobs", "0"])
        #expect(jobs.status == 3 && jobs.stderr.contains("--jobs"), "\(jobs.stderr)")
    }

    @Test func drawsAProgressBarOnATerminal() throws {
        let directory = try TemporaryDirectory()
        let media = try makeMedia(in: directory)
        // script(1) gives the command a pseudo-terminal and copies what it writes to standard output.
        let command = [guardPlayBinary, "catalogue", media, "--out", directory.path("out")].map { "'\($0)'" }
        let result = try run("/usr/bin/script", ["-qec", command.joined(separator: " "), "/dev/null"])
        #expect(result.stdout.contains("\r[------------------------------] 0/4"), "\(result.stdout)")
        #expect(result.stdout.contains("] 4/4"), "\(result.stdout)")
        #expect(result.stdout.contains("FAILED  cut.mp4"))
        #expect(!result.stdout.contains("ok      song.m4a"), "passes show only in the bar")
    }
}
