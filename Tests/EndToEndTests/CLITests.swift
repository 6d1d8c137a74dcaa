import Testing

@Suite(.hangGuard) struct CLITests {
    @Test func unknownOptionIsAUsageError() throws {
        let result = try guardPlay(["media/song.m4a", "--no-such-option"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("unknown option '--no-such-option'"))
    }

    @Test func versionPrints() throws {
        let result = try guardPlay(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("guard-play "))
    }
}
