import Foundation
import Testing

@Suite(.hangGuard) struct CLITests {
    @Test func unknownOptionIsAUsageError() throws {
        let result = try guardPlay(["media/song.m4a", "--no-such-option"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("unknown option '--no-such-option'"))
    }

    @Test func aMisspelledCommandIsNamedAsNeitherCommandNorFileWithTheCommandMeant() throws {
        let directory = try TemporaryDirectory()
        let result = try guardPlay(["pakage", fixture("clip.mp4"), "--out", directory.path("x")])
        #expect(result.status == 2)
        #expect(
            result.stderr.contains("'pakage' is neither a command nor a file; did you mean 'package'?"),
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("x")))
        // A missing media file is still a missing input, not a misspelled command.
        let missing = try guardPlay([directory.path("pakage.mp4")])
        #expect(missing.status == 10, "\(missing.stderr)")
        #expect(!missing.stderr.contains("did you mean"))
    }

    @Test(arguments: [
        (["media/song.m4a", "--simulate-recordng"], "--simulate-recordng", "--simulate-recording"),
        (["media/song.m4a", "--lenght=1"], "--lenght=1", "--length"),
        (
            ["package", "media/song.m4a", "--out", "/nonexistent/x", "--segment-duraton", "2"], "--segment-duraton",
            "--segment-duration"
        ),
        (["verify", "/nonexistent", "--key-fil", "k"], "--key-fil", "--key-file"),
        (["serve", "--lisen", "127.0.0.1:0"], "--lisen", "--listen"),
        (["tokens", "create", "--scpoe", "admin"], "--scpoe", "--scope"),
    ])
    func anUnknownOptionSuggestsTheNearestOneOfItsCommand(
        _ arguments: [String], _ typed: String, _ meant: String
    ) throws {
        let result = try guardPlay(arguments)
        #expect(result.status == 2)
        #expect(
            result.stderr.contains("unknown option '\(typed)' (did you mean '\(meant)'?)"), "\(result.stderr)")
    }

    @Test func anUnknownOptionFarFromEveryOptionGetsNoGuess() throws {
        let result = try guardPlay(["media/song.m4a", "--xyzzy"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("unknown option '--xyzzy' (see guard-play help)"), "\(result.stderr)")
    }

    @Test func theSummariesCountInTheSingularWhenThereIsOne() throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("out")
        let packaged = try guardPlay(["package", fixture("mono-48k.m4a"), "--out", out, "--segment-duration", "60"])
        #expect(packaged.status == 0, "\(packaged.stderr)")
        #expect(packaged.stdout.contains("(SAMPLE-AES, 1 stream, 1 segment, "), "\(packaged.stdout)")
        let verified = try guardPlay(["verify", out])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains(", 1 playlist, 1 segment"), "\(verified.stdout)")
    }

    @Test func audioAloneIsProtectedByMutingOnlyAndSaysSo() throws {
        let result = try guardPlay(
            [fixture("song.m4a"), "--simulate-recording=0.5-", "--length", "1", "--output", "null"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("capturing (simulated: "), "\(result.stderr)")
        #expect(result.stderr.contains("(protected: muted)\n"), "\(result.stderr)")
        #expect(!result.stderr.contains("masked)"), "\(result.stderr)")
    }

    @Test func versionPrints() throws {
        let result = try guardPlay(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("guard-play "))
    }
}
