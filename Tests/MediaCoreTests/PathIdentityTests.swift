import Foundation
import MediaCore
import Testing

/// Two spellings of one file are one file, and a directory holds what lies beneath it at any depth,
/// whatever links, `.`, `..` or hard links say on the way.
@Suite struct PathIdentityTests {
    /// A fresh directory (resolved, since the system's temporary directory may itself be a link) with
    /// `d/sub/in.wav`, a hard link `d/hard.wav`, a link `file.lnk` to the file and `dir.lnk` to `d`.
    private func tree() throws -> String {
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("paths-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: temporary.appendingPathComponent("d/sub"), withIntermediateDirectories: true)
        let root = temporary.resolvingSymlinksInPath().path
        try Data("RIFF".utf8).write(to: URL(fileURLWithPath: root + "/d/sub/in.wav"))
        try FileManager.default.linkItem(atPath: root + "/d/sub/in.wav", toPath: root + "/d/hard.wav")
        try FileManager.default.createSymbolicLink(atPath: root + "/file.lnk", withDestinationPath: "d/sub/in.wav")
        try FileManager.default.createSymbolicLink(atPath: root + "/dir.lnk", withDestinationPath: "d")
        return root
    }

    @Test func spellingsOfOneFileAreTheSame() throws {
        let root = try tree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = PathIdentity(root + "/d/sub/in.wav")
        for spelling in [
            "/d/sub/./in.wav", "/d/sub/../sub/in.wav", "//d//sub/in.wav", "/file.lnk", "/dir.lnk/sub/in.wav",
            "/d/hard.wav",
        ] {
            #expect(PathIdentity(root + spelling).isSame(as: file), "\(spelling)")
        }
        #expect(!PathIdentity(root + "/d/sub").isSame(as: file))
        #expect(!PathIdentity(root + "/d/sub/other.wav").isSame(as: file))
    }

    @Test func relativePathsResolveAgainstTheWorkingDirectory() throws {
        // The working directory is shared by every test in the process, so it is read, never changed.
        let working = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).resolvingSymlinksInPath().path
        #expect(PathIdentity("no-such-name/out").resolved == working + "/no-such-name/out")
        #expect(PathIdentity("./no-such-name/../x").resolved == working + "/x")
        #expect(PathIdentity(".").isSame(as: PathIdentity(working)))
        #expect(PathIdentity("..").contains(PathIdentity("no-such-name")))
    }

    @Test func aDirectoryContainsWhatLiesBeneathItAtAnyDepth() throws {
        let root = try tree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = PathIdentity(root + "/d/sub/in.wav")
        for directory in ["/d/sub", "/d", "", "/dir.lnk", "/dir.lnk/sub/..", "/d/sub/", "/d/./sub/../"] {
            #expect(PathIdentity(root + directory).contains(file), "\(directory)")
        }
        // Named through a link, the file is still inside the directory its link leads to.
        #expect(PathIdentity(root + "/d").contains(PathIdentity(root + "/file.lnk")))
        #expect(PathIdentity(root + "/d/sub").contains(PathIdentity(root + "/d/sub")))
        #expect(!PathIdentity(root + "/d/sub").contains(PathIdentity(root + "/d")))
        #expect(!PathIdentity(root + "/d/su").contains(file))
        #expect(!file.contains(PathIdentity(root + "/d/sub")))
        #expect(PathIdentity("/").contains(file))
    }

    @Test func pathsThatDoNotExistYetCompareByTheirResolvedSpelling() throws {
        let root = try tree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let planned = PathIdentity(root + "/dir.lnk/new/out")
        #expect(planned.file == nil)
        #expect(planned.resolved == root + "/d/new/out")
        #expect(PathIdentity(root + "/d").contains(planned))
        #expect(PathIdentity(root + "/d/new").contains(PathIdentity(root + "/d/new/x/../out/k.key")))
        #expect(PathIdentity(root + "/d/new/out").isSame(as: PathIdentity(root + "/dir.lnk/new/./out/")))
        #expect(!PathIdentity(root + "/d/new/out").contains(PathIdentity(root + "/d/new/outside")))
        #expect(planned.overlaps(PathIdentity(root + "/d")))
        #expect(PathIdentity(root + "/d").overlaps(planned))
    }

    @Test func theEntryPathKeepsALinkInTheLastPlace() throws {
        let root = try tree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(PathIdentity.entryPath(root + "/file.lnk") == root + "/file.lnk")
        #expect(PathIdentity.entryPath(root + "/dir.lnk/sub/in.wav") == root + "/d/sub/in.wav")
        #expect(PathIdentity.entryPath(root + "/dir.lnk/") == root + "/dir.lnk")
        #expect(PathIdentity.entryPath(root + "/d/sub/..") == root + "/d")
        #expect(PathIdentity.entryPath(root + "/d/./new.key") == root + "/d/new.key")
        #expect(PathIdentity.entryPath("/") == "/")
    }

    @Test func urlsMatchNothing() {
        let url = PathIdentity("http://example.com/in.wav")
        #expect(!url.isSame(as: url))
        #expect(!PathIdentity("/").contains(url))
        #expect(!url.contains(PathIdentity("/tmp")))
    }
}
