import Foundation
import Testing

/// `scripts/package-catalogue.sh`, the pipeline media teams copy into their CI: it packages and verifies
/// every file, keeps keys out of the published tree, and fails the job on any file that does not make it.
@Suite(.timeLimit(.minutes(10))) struct CatalogueScriptTests {
    private let script = repositoryRoot.appendingPathComponent("scripts/package-catalogue.sh").path

    @Test func packagesAndVerifiesEveryFileAndFailsOnABadOne() throws {
        let directory = try TemporaryDirectory()
        let media = directory.path("media")
        try FileManager.default.createDirectory(atPath: media, withIntermediateDirectories: true)
        for name in ["song.m4a", "video-only.mp4"] {
            try FileManager.default.copyItem(atPath: fixture(name), toPath: media + "/" + name)
        }
        let out = directory.path("out")
        let good = try run("/bin/bash", [script, media, out], environment: ["GUARD_PLAY": guardPlayBinary])
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        #expect(good.stdout.contains("2 of 2 files packaged and verified"))
        #expect(good.stdout.contains("song.m4a                     ok        OK: every access unit equals the source"))
        let published = try FileManager.default.subpathsOfDirectory(atPath: out + "/hls")
        #expect(!published.isEmpty && !published.contains { $0.hasSuffix(".key") })
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out + "/keys").sorted() == [
                "song.key", "video-only.key",
            ])

        let whole = try Data(contentsOf: URL(fileURLWithPath: fixture("clip.mp4")))
        _ = FileManager.default.createFile(atPath: media + "/cut.mp4", contents: whole.prefix(whole.count / 2))
        let bad = try run("/bin/bash", [script, media, out], environment: ["GUARD_PLAY": guardPlayBinary])
        #expect(bad.status == 1)
        #expect(
            bad.stdout.contains("cut.mp4") && bad.stdout.contains("FAILED") && bad.stdout.contains("package exit 14"))
        #expect(bad.stdout.contains("2 of 3 files packaged and verified"))
    }
}
