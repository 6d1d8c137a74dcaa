import Foundation
import Testing

/// The release artefacts of `make dist` (scripts/dist.sh), built once per test run and cached by the
/// working tree's git tree hash under .build/dist-cache, so only a changed tree pays the release build.
enum Dist {
    struct Artefacts {
        let directory: String
        let version: String
        var deb: String { directory + "/guard-play_\(version)_amd64.deb" }
        var tarball: String { directory + "/guard-play-\(version)-linux-x86_64.tar.gz" }
    }

    /// Runs scripts/dist.sh into a directory of this run's own. The test run holds the build lock
    /// already (the tests are run under it), so the script must not wait for it.
    static let artefacts: Result<Artefacts, DistError> = {
        let script = repositoryRoot.appendingPathComponent("scripts/dist.sh").path
        let built: ProcessResult
        do {
            built = try run(script, [], environment: ["GUARDPLAY_BUILD_LOCK_HELD": "1"], timeout: 900)
        } catch { return .failure(DistError(message: "\(error)")) }
        guard built.status == 0 else { return .failure(DistError(message: built.stderr)) }
        let directory = repositoryRoot.appendingPathComponent("dist").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard let deb = names.first(where: { $0.hasSuffix("_amd64.deb") }) else {
            return .failure(DistError(message: "no .deb in dist/: \(names)"))
        }
        let version = String(deb.dropFirst("guard-play_".count).dropLast("_amd64.deb".count))
        // A copy of this run's own: another run's dist.sh replaces dist/ as a whole.
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("guardplay-dist-\(getpid())").path
        try? FileManager.default.removeItem(atPath: copy)
        do { try FileManager.default.copyItem(atPath: directory, toPath: copy) } catch {
            return .failure(DistError(message: "\(error)"))
        }
        RemovedAtExit.add(copy)
        return .success(Artefacts(directory: copy, version: version))
    }()

    struct DistError: Error, CustomStringConvertible {
        let message: String
        var description: String { "make dist failed: \(message)" }
    }
}

/// `make dist`: a tarball and a .deb whose binary needs no Swift toolchain, a Depends: derived from the
/// binary's NEEDED entries, the man page, completions, unit and examples in both, and SHA256SUMS.
@Suite(.serialized, .timeLimit(.minutes(30))) struct DistTests {
    @Test func theDebsDependsIsWhatTheBinarysNeededEntriesResolveTo() throws {
        let dist = try Dist.artefacts.get()
        let directory = try TemporaryDirectory()
        let root = directory.path("root")
        #expect(try run("/usr/bin/dpkg-deb", ["-x", dist.deb, root]).status == 0)
        let binary = root + "/usr/bin/guard-play"

        // Derived here independently of scripts/elf-depends.sh: readelf, the linker cache, dpkg -S.
        let dynamic = try run("/usr/bin/readelf", ["-d", binary]).stdout
        let needed = dynamic.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            line.split(separator: "[").last?.split(separator: "]").first.map(String.init)
        }
        #expect(!needed.isEmpty)
        #expect(!needed.contains { $0.hasPrefix("libswift") || $0.hasPrefix("libFoundation") }, "\(needed)")
        let cache = try run("/sbin/ldconfig", ["-p"]).stdout.split(separator: "\n")
        var packages: [String: String] = [:]
        for soname in needed {
            let entry = try #require(
                cache.first { $0.hasPrefix("\t\(soname) ") && $0.contains("x86-64") }, "\(soname) in ldconfig -p")
            let file = String(try #require(entry.components(separatedBy: " => ").last))
            let real = URL(fileURLWithPath: file).resolvingSymlinksInPath().path
            var owner: String?
            for candidate in [file, real, String(file.dropFirst(file.hasPrefix("/usr") ? 4 : 0)), "/usr" + file]
            where owner == nil {
                let query = try run("/usr/bin/dpkg", ["-S", candidate])
                if query.status == 0 { owner = query.stdout.split(separator: ":").first.map(String.init) }
            }
            let package = try #require(owner, "a package owns \(file)")
            let version = try run("/usr/bin/dpkg-query", ["-W", "-f=${Version}", package]).stdout
            packages[package] = "\(package) (>= \(version))"
        }
        let expected = packages.keys.sorted().compactMap { packages[$0] }.joined(separator: ", ")
        let depends = try run("/usr/bin/dpkg-deb", ["-f", dist.deb, "Depends"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(depends == expected)
        for library in ["libmicrohttpd12", "libsqlite3-0", "libavformat59", "libssl3", "libc6"] {
            #expect(depends.contains(library + " (>= "), "\(library) in \(depends)")
        }
        #expect(
            try run("/usr/bin/dpkg-deb", ["-f", dist.deb, "Package", "Version", "Architecture"]).stdout
                == "Package: guard-play\nVersion: \(dist.version)\nArchitecture: amd64\n")
    }

    @Test func theBinaryRunsWithTheToolchainHidden() throws {
        let dist = try Dist.artefacts.get()
        let directory = try TemporaryDirectory()
        #expect(try run("/bin/tar", ["-xzf", dist.tarball, "-C", directory.url.path]).status == 0)
        let binary = directory.path("guard-play-\(dist.version)-linux-x86_64/bin/guard-play")
        // /opt/swift emptied in a mount namespace of its own: no Swift runtime to load from there.
        let hidden = { (binary: String) in
            try run("/usr/bin/unshare", ["-m", "sh", "-c", "mount -t tmpfs none /opt/swift && '\(binary)' --version"])
        }
        let released = try hidden(binary)
        #expect(released.status == 0, "\(released.stderr)")
        #expect(released.stdout == "guard-play \(dist.version)\n")
        // The control: the debug build, which loads libswiftCore from the toolchain, cannot start there.
        let debug = try hidden(guardPlayBinary)
        #expect(debug.status == 127 && debug.stderr.contains("libswift"), "\(debug.stderr)")
    }

    @Test func bothArtefactsHoldTheBinaryManPageCompletionsUnitAndExamples() throws {
        let dist = try Dist.artefacts.get()
        let listing = try run("/usr/bin/dpkg-deb", ["-c", dist.deb])
        #expect(listing.status == 0)
        let files = Set(
            listing.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
        for file in [
            "./usr/bin/guard-play", "./usr/share/man/man1/guard-play.1.gz",
            "./usr/share/bash-completion/completions/guard-play", "./usr/share/zsh/vendor-completions/_guard-play",
            "./lib/systemd/system/guardplay.service", "./lib/systemd/system/guardplay@.service",
            "./usr/share/doc/guard-play/examples/guardplay.conf",
            "./usr/share/doc/guard-play/examples/nginx/guardplay.conf", "./usr/share/doc/guard-play/README.md",
        ] {
            #expect(files.contains(file), "\(file) in the .deb")
        }
        let directory = try TemporaryDirectory()
        #expect(try run("/usr/bin/dpkg-deb", ["-x", dist.deb, directory.url.path]).status == 0)
        let unit = try String(
            contentsOfFile: directory.path("lib/systemd/system/guardplay.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/guard-play serve --config /etc/guardplay/guardplay.conf\n"))
        #expect(!unit.contains("/usr/local/bin"))
        // The template for several nodes, each instance with its own configuration.
        let template = try String(
            contentsOfFile: directory.path("lib/systemd/system/guardplay@.service"), encoding: .utf8)
        #expect(template.contains("ExecStart=/usr/bin/guard-play serve --config /etc/guardplay/%i.conf\n"))
        #expect(
            template.contains("ExecStartPre=/usr/bin/guard-play serve --config /etc/guardplay/%i.conf --check-config\n")
        )
        #expect(!template.contains("/usr/local/bin"))
        let page = try run("/bin/sh", ["-c", "zcat '\(directory.path("usr/share/man/man1/guard-play.1.gz"))'"])
        #expect(page.stdout == (try guardPlay(["help", "--man"])).stdout)

        let tar = try run("/bin/tar", ["-tzf", dist.tarball]).stdout.split(separator: "\n").map(String.init)
        let top = "guard-play-\(dist.version)-linux-x86_64/"
        for file in [
            "bin/guard-play", "share/man/man1/guard-play.1", "share/bash-completion/completions/guard-play",
            "share/zsh/vendor-completions/_guard-play", "lib/systemd/system/guardplay.service",
            "lib/systemd/system/guardplay@.service",
            "share/doc/guard-play/examples/guardplay.conf", "share/doc/guard-play/README.md",
        ] {
            #expect(tar.contains(top + file), "\(file) in the tarball")
        }
        let sums = try run("/bin/sh", ["-c", "cd '\(dist.directory)' && sha256sum -c SHA256SUMS"])
        #expect(sums.status == 0, "\(sums.stdout)\(sums.stderr)")
        #expect(sums.stdout.split(separator: "\n").count == 2)
    }
}

/// The .deb on a bare Debian 12 (debootstrap's minbase, cached under .build/ and made once): installed
/// with nothing but `apt-get install`, guard-play runs, packages and verifies the fixtures, and serves.
@Suite(.serialized, .timeLimit(.minutes(30))) struct BareDebianTests {
    @Test func theDebInstallsAndRunsOnABareDebian12() throws {
        let made = try run(
            repositoryRoot.appendingPathComponent("scripts/debian-root.sh").path, [], timeout: 1200)
        guard made.status == 0 else {
            // The one reason to skip: the root cannot be made here (no debootstrap, no mirror).
            print("BareDebianTests: skipped, the Debian 12 root cannot be built: \(made.stderr.suffix(600))")
            return
        }
        let root = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let dist = try Dist.artefacts.get()
        let media = try TemporaryDirectory()
        for name in ["clip.mp4", "song.m4a", "qr-still.png", "chime.opus"] {
            try FileManager.default.copyItem(atPath: fixture(name), toPath: media.path(name))
        }
        let port = try freePort()
        let proof = try run(
            repositoryRoot.appendingPathComponent("scripts/bare-debian-proof.sh").path,
            [root, dist.deb, media.url.path, String(port)], timeout: 1200)
        #expect(proof.status == 0, "\(proof.stdout)\(proof.stderr)")
        let lines = proof.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("swift in the root: 0"), "no Swift toolchain in the root")
        #expect(lines.contains("guard-play \(dist.version)"), "\(proof.stdout)")
        for name in ["clip.mp4", "song.m4a", "qr-still.png", "chime.opus"] {
            #expect(lines.contains { $0.hasPrefix("ok") && $0.contains(name) }, "\(name): \(proof.stdout)")
        }
        #expect(lines.contains("catalogue exit 0"))
        #expect(lines.contains { $0.contains(#"tests="4" failures="0""#) }, "\(proof.stdout)")
        #expect(lines.contains { $0.hasPrefix("livez: ") }, "\(proof.stdout)\(proof.stderr)")
    }
}
