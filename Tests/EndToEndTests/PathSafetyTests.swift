import Crypto
import Foundation
import Testing

/// No output, key file or `--force` may touch an input: each reproduction of issue 9's data loss, run
/// against the binary in a temporary directory, must be refused with the usage exit code (or, for
/// something `--force` may not replace, 21) before anything is written, the input's bytes unchanged.
@Suite(.timeLimit(.minutes(30))) struct PathSafetyTests {
    /// The SHA-256 of a file's bytes.
    private func hash(_ path: String) throws -> String {
        Digest.sha256([UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))).hexString
    }

    /// Copies a fixture to `path` (creating its parent) and returns the copy's hash.
    private func copy(_ name: String, to path: String) throws -> String {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture(name), toPath: path)
        return try hash(path)
    }

    /// A fresh directory with a copy of song.m4a, its path and its hash.
    private func songInScratch() throws -> (TemporaryDirectory, String, String) {
        let directory = try TemporaryDirectory()
        let input = directory.path("song.m4a")
        return (directory, input, try copy("song.m4a", to: input))
    }

    /// Runs `arguments` and checks the refusal: the exit code, every fragment in one line of stderr,
    /// and `input` still holding the bytes hashed as `digest`.
    private func expectRefusal(
        _ arguments: [String], status: Int32, says fragments: [String], input: String, digest: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let result = try guardPlay(arguments, timeout: 20)
        #expect(result.status == status, "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(result.stderr.contains(fragment), "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        }
        #expect(
            result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)",
            sourceLocation: sourceLocation)
        #expect(FileManager.default.fileExists(atPath: input), "\(input) is gone", sourceLocation: sourceLocation)
        #expect(try hash(input) == digest, "\(input) was changed", sourceLocation: sourceLocation)
    }

    /// Names in a directory, sorted.
    private func listing(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    // MARK: package --out

    @Test func packageRefusesTheInputsOwnDirectoryAsOut() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("d/in.mp4")
        let digest = try copy("clip.mp4", to: input)
        try expectRefusal(
            ["package", input, "--out", directory.path("d"), "--force", "--key", testKey, "--quiet"], status: 2,
            says: ["contains the input", "--out"], input: input, digest: digest)
        #expect(try listing(directory.path("d")) == ["in.mp4"])
        #expect(partialSiblings(of: directory.path("d")).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory.path("d.key")))
    }

    @Test func packageRefusesTheInputsGrandparentAsOut() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("g/p/in.mp4")
        let digest = try copy("clip.mp4", to: input)
        try expectRefusal(
            ["package", input, "--out", directory.path("g"), "--force", "--key", testKey, "--quiet"], status: 2,
            says: ["contains the input"], input: input, digest: digest)
        #expect(try listing(directory.path("g")) == ["p"])
        #expect(partialSiblings(of: directory.path("g")).isEmpty)
    }

    @Test func packageSeesThroughSymbolicLinksAndOtherSpellingsOfOut() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("d/in.mp4")
        let digest = try copy("clip.mp4", to: input)
        // The input named through a link outside the directory that --out names.
        try FileManager.default.createSymbolicLink(atPath: directory.path("link.mp4"), withDestinationPath: input)
        try expectRefusal(
            ["package", directory.path("link.mp4"), "--out", directory.path("d"), "--force", "--quiet"], status: 2,
            says: ["contains the input"], input: input, digest: digest)
        // --out named through a link to the input's directory, and through `..` and `.`.
        try FileManager.default.createSymbolicLink(atPath: directory.path("dlink"), withDestinationPath: "d")
        try FileManager.default.createDirectory(atPath: directory.path("d/sub"), withIntermediateDirectories: true)
        for out in [directory.path("dlink"), directory.path("d/sub/.."), directory.path("./d/."), directory.path("d/")]
        {
            try expectRefusal(
                ["package", input, "--out", out, "--force", "--quiet"], status: 2, says: ["contains the input"],
                input: input, digest: digest)
        }
        #expect(try listing(directory.path("d")) == ["in.mp4", "sub"])
    }

    // MARK: package --key-file

    @Test func packageRefusesTheInputAsKeyFile() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("kf/in.m4a")
        let digest = try copy("song.m4a", to: input)
        try expectRefusal(
            [
                "package", input, "--out", directory.path("kf/o"), "--key", testKey, "--key-file", input, "--force",
                "--quiet",
            ], status: 2, says: ["key file", "is the input"], input: input, digest: digest)
        #expect(try listing(directory.path("kf")) == ["in.m4a"])
    }

    @Test func packageRefusesAHardLinkOfTheInputAsKeyFile() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("kf/in.m4a")
        let digest = try copy("song.m4a", to: input)
        try FileManager.default.linkItem(atPath: input, toPath: directory.path("kf/k.key"))
        try expectRefusal(
            [
                "package", input, "--out", directory.path("kf/o"), "--key", testKey, "--key-file",
                directory.path("kf/k.key"), "--force", "--quiet",
            ], status: 2, says: ["key file", "is the input"], input: input, digest: digest)
        #expect(try hash(directory.path("kf/k.key")) == digest)
        #expect(!FileManager.default.fileExists(atPath: directory.path("kf/o")))
    }

    @Test func packageRefusesAKeyFileInsideTheOutputThroughALink() throws {
        let (directory, input, digest) = try songInScratch()
        let output = directory.path("o")
        #expect(try package(input, output).status == 0)
        let before = try snapshot(output)
        try FileManager.default.createSymbolicLink(atPath: directory.path("olink"), withDestinationPath: "o")
        try expectRefusal(
            ["package", input, "--out", output, "--key-file", directory.path("olink/k.key"), "--force", "--quiet"],
            status: 2, says: ["key file", "inside the output"], input: input, digest: digest)
        #expect(try snapshot(output) == before)
    }

    @Test func forceRefusesASymlinkedKeyFile() throws {
        let (directory, input, digest) = try songInScratch()
        let victim = directory.path("notes.txt")
        try Data("someone's notes\n".utf8).write(to: URL(fileURLWithPath: victim))
        let keyFile = directory.path("o.key")
        try FileManager.default.createSymbolicLink(atPath: keyFile, withDestinationPath: victim)
        try expectRefusal(
            ["package", input, "--out", directory.path("o"), "--key", testKey, "--key-file", keyFile, "--force"],
            status: 21, says: ["symbolic link", keyFile], input: input, digest: digest)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "someone's notes\n")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: keyFile) == victim)
        #expect(!FileManager.default.fileExists(atPath: directory.path("o")))
    }

    @Test func forceRefusesAKeyFileItDidNotWrite() throws {
        let (directory, input, digest) = try songInScratch()
        let keyFile = directory.path("o.key")
        try Data("a file of the user's, not a key\n".utf8).write(to: URL(fileURLWithPath: keyFile))
        try expectRefusal(
            ["package", input, "--out", directory.path("o"), "--key-file", keyFile, "--force", "--quiet"],
            status: 21, says: ["not a key file", keyFile], input: input, digest: digest)
        #expect(try String(contentsOfFile: keyFile, encoding: .utf8) == "a file of the user's, not a key\n")
    }

    @Test func forceRefusesADirectoryItDidNotWrite() throws {
        let (directory, input, digest) = try songInScratch()
        let output = directory.path("photos")
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        try Data("holiday\n".utf8).write(to: URL(fileURLWithPath: output + "/list.txt"))
        try expectRefusal(
            ["package", input, "--out", output, "--force", "--quiet"], status: 21,
            says: ["not an output of guard-play package", "--force"], input: input, digest: digest)
        #expect(try listing(output) == ["list.txt"])
        #expect(try String(contentsOfFile: output + "/list.txt", encoding: .utf8) == "holiday\n")
        #expect(partialSiblings(of: output).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: output + ".key"))
    }

    @Test func forceReplacesAPreviousOutputByItsMarker() throws {
        let directory = try TemporaryDirectory()
        let output = directory.path("o")
        #expect(try package(fixture("clip.mp4"), output).status == 0)
        #expect(FileManager.default.fileExists(atPath: output + "/.guard-play-output"))
        let again = try package(fixture("song.m4a"), output, ["--force"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(FileManager.default.fileExists(atPath: output + "/audio.m3u8"))
        #expect(FileManager.default.fileExists(atPath: output + "/.guard-play-output"))
        #expect(partialSiblings(of: output).isEmpty)
    }

    // MARK: the player's --output

    @Test func playerRefusesItsInputAsOutput() throws {
        let directory = try TemporaryDirectory()
        let input = directory.path("in.wav")
        #expect(try ffmpeg(["-i", fixture("chime-48k.flac"), "-t", "1", input]).status == 0)
        let digest = try hash(input)
        try FileManager.default.createDirectory(atPath: directory.path("sub"), withIntermediateDirectories: true)
        try FileManager.default.linkItem(atPath: input, toPath: directory.path("hard.wav"))
        try FileManager.default.createSymbolicLink(atPath: directory.path("link.wav"), withDestinationPath: "in.wav")
        let cases: [(input: String, output: String)] = [
            (input, input),
            (input, directory.path("./in.wav")),
            (input, directory.path("sub/../in.wav")),
            (input, directory.path("hard.wav")),
            (directory.path("link.wav"), input),
            (input, directory.path("link.wav")),
        ]
        for (given, output) in cases {
            try expectRefusal(
                [given, "--output", output], status: 2, says: ["--output", "is the input"], input: input,
                digest: digest)
        }
        #expect(try listing(directory.url.path) == ["hard.wav", "in.wav", "link.wav", "sub"])
    }

    // MARK: the gateway

    @Test func serveRefusesADataDirectoryThatOverlapsTheInputRoot() throws {
        let directory = try TemporaryDirectory()
        let root = directory.path("srv")
        let input = root + "/inputs/in.mp4"
        let digest = try copy("clip.mp4", to: input)
        try FileManager.default.createSymbolicLink(atPath: directory.path("srvlink"), withDestinationPath: "srv")
        let cases: [(data: String, inputRoot: String)] = [
            (root, root),
            (root, root + "/inputs"),
            (directory.path("srvlink"), root + "/inputs"),
            (root + "/inputs/./", directory.path("srvlink/inputs")),
        ]
        for (data, inputRoot) in cases {
            for extra in [["--check-config"], []] {
                let arguments = ["serve", "--data", data, "--input-root", inputRoot, "--listen", "127.0.0.1:0"] + extra
                let result = try guardPlay(arguments, environment: ["GUARDPLAY_KEK": testKEKHex], timeout: 20)
                #expect(result.status == 2, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("--input-root"), "\(result.stderr)")
                #expect(result.stderr.contains("--data"), "\(result.stderr)")
                #expect(!result.stdout.contains("listening"), "\(result.stdout)")
            }
        }
        #expect(try hash(input) == digest)
        #expect(try listing(root) == ["inputs"])
        #expect(try listing(root + "/inputs") == ["in.mp4"])
    }
}
