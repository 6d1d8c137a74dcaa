import Foundation
import Testing

/// The man page and the bash and zsh completions are generated from the tables `--help` prints: every
/// option each command's help shows is in its section of the man page and in both completions, the page
/// renders without a warning, and bash completes a prefix to the options that start with it.
@Suite(.timeLimit(.minutes(30))) struct ManAndCompletionTests {
    /// The commands and the help topic that prints each (`play` is the default command).
    private static let commands = ["play", "package", "verify", "catalogue", "serve", "tokens", "watermark"]

    /// The options a help text shows, read from it here, not from the generators' parser: every
    /// `--name` word on a line indented at most four spaces that starts with `--`.
    private func documentedOptions(_ command: String) throws -> [String] {
        let help = try guardPlay(["help", command])
        #expect(help.status == 0)
        var names: [String] = []
        for line in help.stdout.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            guard indent <= 4, line.dropFirst(indent).hasPrefix("--") else { continue }
            for word in line.split(separator: " ") where word.hasPrefix("--") {
                let name = word.dropFirst(2).prefix { $0.isLetter || $0.isNumber || $0 == "-" }
                if !name.isEmpty && !names.contains(String(name)) { names.append(String(name)) }
            }
        }
        return names
    }

    @Test func aCommandsHelpOptionPrintsItsHelp() throws {
        for command in Self.commands where command != "play" {
            let expected = try guardPlay(["help", command])
            for arguments in [[command, "--help"], [command, "-h"], [command, "--out", "x", "--help"]] {
                let result = try guardPlay(arguments)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                #expect(result.stdout == expected.stdout, "\(arguments)")
                #expect(result.stderr.isEmpty, "\(arguments): \(result.stderr)")
            }
        }
        let detect = try guardPlay(["watermark", "detect", "--help"])
        #expect(detect.status == 0 && detect.stdout.contains("--asset"), "\(detect.stdout)\(detect.stderr)")
    }

    @Test func everyHelpOptionIsAcceptedByItsCommandsParser() throws {
        for command in Self.commands {
            let options = try documentedOptions(command)
            #expect(options.count >= 4, "\(command): \(options)")
            for option in options {
                // serve would start with good options: a stray argument stops it once they are parsed.
                let arguments =
                    (command == "play" ? [] : [command]) + ["--\(option)=x"] + (command == "serve" ? ["stray"] : [])
                let result = try guardPlay(arguments, timeout: 30)
                #expect(!result.stderr.contains("unknown option"), "\(command) --\(option): \(result.stderr)")
            }
        }
    }

    @Test func theManPageHoldsEveryOptionInItsCommandsSectionAndRendersWithoutWarnings() throws {
        let directory = try TemporaryDirectory()
        let page = try guardPlay(["help", "--man"])
        #expect(page.status == 0)
        let path = directory.path("guard-play.1")
        try Data(page.stdout.utf8).write(to: URL(fileURLWithPath: path))
        #expect(page.stdout.hasPrefix(#".\""#) && page.stdout.contains(".TH GUARD\\-PLAY 1"))

        // Each `.SS` section is one command's; every option its help shows is a tagged paragraph there.
        var sections: [String: String] = [:]
        for part in page.stdout.components(separatedBy: "\n.SS ").dropFirst() {
            let name = part.prefix { $0 != "\n" }.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            sections[name] = part
        }
        #expect(Set(sections.keys) == Set(Self.commands))
        for command in Self.commands {
            let lines = (sections[command] ?? "").split(separator: "\n", omittingEmptySubsequences: false)
            let tags = zip(lines, lines.dropFirst()).filter { $0.0 == ".TP" }.map { String($0.1) }
            for option in try documentedOptions(command) {
                let roff = "\\-\\-" + option.replacingOccurrences(of: "-", with: "\\-")
                let named = tags.contains { tag in
                    let words = tag.replacingOccurrences(of: "\\fB", with: "").replacingOccurrences(
                        of: "\\fR", with: ""
                    )
                    .split(separator: " ")
                    return words.contains { $0 == roff || $0.hasPrefix(roff + "[") || $0.hasPrefix(roff + "=") }
                }
                #expect(named, "\(command): --\(option) in the man page's tags")
            }
        }

        // man-db formats it with groff's warnings on; nothing may be reported.
        let rendered = try run(
            "/usr/bin/man", ["--warnings", "-E", "ascii", "-l", path],
            environment: ["MANWIDTH": "80", "MANPAGER": "cat"])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        #expect(rendered.stderr.isEmpty, "\(rendered.stderr)")
        for command in Self.commands {
            for option in try documentedOptions(command) {
                #expect(rendered.stdout.contains("--\(option)"), "--\(option) rendered")
            }
        }
        let lint = try run("/usr/bin/groff", ["-man", "-ww", "-z", "-Tutf8", path])
        #expect(lint.status == 0 && lint.stderr.isEmpty, "\(lint.stderr)")
    }

    /// Runs `script` in bash with the generated completion sourced.
    private func bash(_ script: String) throws -> ProcessResult {
        let completion = "source <('\(guardPlayBinary)' --completion bash)\n"
        return try run("/bin/bash", ["--norc", "-c", completion + script])
    }

    /// The words bash's completion offers for `words`, the last being the one completed.
    private func complete(_ words: [String]) throws -> [String] {
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let result = try bash(
            "COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _guard_play; printf '%s\\n' \"${COMPREPLY[@]}\"")
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    @Test func bashCompletesEachCommandsOptionsFromAPrefix() throws {
        let registered = try bash("complete -p guard-play")
        #expect(registered.status == 0, "\(registered.stderr)")
        #expect(registered.stdout.contains("-F _guard_play guard-play"), "\(registered.stdout)")

        let play = try documentedOptions("play")
        #expect(
            try complete(["guard-play", "clip.mp4", "--cont"]) == play.filter { $0.hasPrefix("cont") }.map { "--" + $0 }
        )
        #expect(try complete(["guard-play", "cata"]).contains("catalogue"))
        #expect(try complete(["guard-play", "clip.mp4", "--on-unknown", ""]) == ["protect", "allow"])
        #expect(try complete(["guard-play", "tokens", "cr"]) == ["create"])
        for command in Self.commands {
            let prefix = command == "play" ? ["guard-play", "clip.mp4"] : ["guard-play", command, "x"]
            let options = try documentedOptions(command)
            for option in options {
                let offered = try complete(prefix + ["--\(option)"])
                #expect(offered.contains("--\(option)"), "\(command) --\(option): \(offered)")
                // Every completion of the whole name is an option of this command that starts with it.
                #expect(offered.allSatisfy { options.contains(String($0.dropFirst(2))) || command == "play" })
            }
        }
    }

    @Test func zshLoadsTheCompletionAndItNamesEveryOption() throws {
        let zsh = try guardPlay(["--completion", "zsh"])
        #expect(zsh.status == 0 && zsh.stdout.hasPrefix("#compdef guard-play"))
        for command in Self.commands {
            let pattern = command == "play" ? "        *) options=(" : "        \(command)) options=("
            let start = try #require(zsh.stdout.range(of: pattern), "\(command)'s case")
            let block = zsh.stdout[start.upperBound...].prefix { $0 != ";" }
            for option in try documentedOptions(command) {
                #expect(block.contains("--\(option)"), "zsh \(command) --\(option)")
            }
        }
        let shell = "/usr/bin/zsh"
        try #require(FileManager.default.isExecutableFile(atPath: shell), "zsh (scripts/setup.sh installs it)")
        let directory = try TemporaryDirectory()
        let loaded = try run(
            shell,
            [
                "-f", "-c",
                "autoload -Uz compinit && compinit -u -d '\(directory.path("zcompdump"))' && "
                    + "source <('\(guardPlayBinary)' --completion zsh) && print -r -- $_comps[guard-play]",
            ])
        #expect(loaded.status == 0 && loaded.stderr.isEmpty, "\(loaded.stderr)")
        #expect(loaded.stdout == "_guard_play\n")
        let unknown = try guardPlay(["--completion", "fish"])
        #expect(unknown.status == 2 && unknown.stderr.contains("bash or zsh"))
    }
}
