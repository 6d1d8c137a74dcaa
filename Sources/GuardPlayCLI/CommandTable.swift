import FoundationEssentials
import SystemSupport

/// Every subcommand with its help and the options its parser accepts: what `--help` prints, and what the
/// man page and the shell completions are generated from, so none of them can drift from another.
struct CommandTable {
    /// One command.
    struct Command {
        /// The word after `guard-play`; `play` is the default command (`guard-play FILE`).
        var name: String
        /// The one-line summary from the top-level usage.
        var summary: String
        /// The command's `--help` text.
        var help: String
        /// What its parser accepts.
        var options: [Arguments.Option]
        /// Words it takes first (the actions of `tokens`), for completion.
        var actions: [String] = []

        /// The help's option rows.
        var table: OptionTable { OptionTable(help: help) }

        /// How `name` takes its value, from the parser's table; a documented name the parser does not
        /// list takes a value when its column shows a placeholder.
        func arity(of name: String) -> Arguments.Arity {
            if let option = options.first(where: { $0.name == name }) { return option.arity }
            let column = table.row(for: name)?.synopsis ?? ""
            return column.contains("[=") ? .optionalValue : column.contains(" ") ? .value : .flag
        }

        /// The choices a row's placeholder lists (`protect|allow`, `line|json|none`), when they are words.
        func choices(of name: String) -> [String] {
            guard let row = table.row(for: name), row.names.count == 1 else { return [] }
            let words = row.synopsis.split(separator: " ").dropFirst()
            guard let placeholder = words.first, placeholder.contains("|") else { return [] }
            let parts = placeholder.split(separator: "|").map(String.init)
            return parts.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "-" } } ? parts : []
        }
    }

    /// The commands in the order the usage lists them, `play` first.
    static let commands: [Command] = [
        Command(name: "play", summary: summary("FILE"), help: PlayCommand.help, options: PlayCommand.options),
        Command(
            name: "package", summary: summary("package"), help: PackageCommand.help, options: PackageCommand.options),
        Command(name: "verify", summary: summary("verify"), help: VerifyCommand.help, options: VerifyCommand.options),
        Command(
            name: "catalogue", summary: summary("catalogue"), help: CatalogueCommand.help,
            options: CatalogueCommand.options),
        Command(name: "serve", summary: summary("serve"), help: ServeCommand.help, options: ServeCommand.options),
        Command(
            name: "tokens", summary: summary("tokens"), help: TokensCommand.help, options: TokensCommand.options,
            actions: ["create", "list", "revoke"]),
        Command(
            name: "watermark", summary: summary("watermark"), help: WatermarkCommand.help,
            options: WatermarkCommand.options, actions: ["detect"]),
    ]

    /// The top level's own options, beside the play command's.
    static let topLevelOptions = ["help", "version", "completion"]

    /// The summary the top-level usage gives the line whose first word after `guard-play` is `word`.
    private static func summary(_ word: String) -> String {
        for line in GuardPlay.usage.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard let index = words.firstIndex(of: "guard-play"), index + 1 < words.count, words[index + 1] == word,
                let gap = line.ranges(of: "   ").last
            else { continue }
            return line[gap.upperBound...].trimmingSpaces()
        }
        return ""
    }
}
