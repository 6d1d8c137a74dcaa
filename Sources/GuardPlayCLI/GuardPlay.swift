import FoundationEssentials
import SystemSupport

/// The top-level dispatcher: picks the subcommand and turns thrown errors into one line and an exit code.
enum GuardPlay {
    static let version = "0.1.0"

    static let usage = """
        usage: guard-play FILE [options]            play with capture protection (see --help)
               guard-play package INPUT --out DIR   package as SAMPLE-AES HLS
               guard-play verify DIR                check a packaged output
               guard-play catalogue DIR --out OUT   package and verify every media file under DIR
               guard-play serve [options]           run the gateway
               guard-play tokens create --scope S   create an API token
               guard-play watermark detect FILE --asset ID   name the session behind a leaked copy
               guard-play help [COMMAND | --man] | --version | --completion bash|zsh
        """

    static func main(_ arguments: [String]) -> Int32 {
        // `guard-play package --help` (or `-h`, anywhere after a subcommand): that command's help, as
        // `guard-play help package` prints it.
        if let command = arguments.first, commands.contains(command), !["help", "version"].contains(command),
            arguments.dropFirst().contains(where: { $0 == "--help" || $0 == "-h" })
        {
            print(helpText(for: command))
            return ExitCode.success.rawValue
        }
        do {
            switch arguments.first {
            case nil:
                throw CLIError(.usage, "no input file\n\(usage)")
            case "help", "-h", "--help":
                let topic = arguments.dropFirst().first
                if topic == "--man" {
                    print(ManPage.render(), terminator: "")
                    return ExitCode.success.rawValue
                }
                print(helpText(for: topic))
                return ExitCode.success.rawValue
            case "--completion":
                guard arguments.count == 2, let script = ShellCompletion.script(for: arguments[1]) else {
                    throw CLIError(.usage, "--completion takes one shell: bash or zsh")
                }
                print(script, terminator: "")
                return ExitCode.success.rawValue
            case "--version", "version":
                print("guard-play \(version)")
                return ExitCode.success.rawValue
            case "package":
                return try PackageCommand.run(Array(arguments.dropFirst())).rawValue
            case "verify":
                return try VerifyCommand.run(Array(arguments.dropFirst())).rawValue
            case "catalogue":
                return try CatalogueCommand.run(Array(arguments.dropFirst())).rawValue
            case "serve":
                return try ServeCommand.run(Array(arguments.dropFirst())).rawValue
            case "tokens":
                return try TokensCommand.run(Array(arguments.dropFirst())).rawValue
            case "watermark":
                return try WatermarkCommand.run(Array(arguments.dropFirst())).rawValue
            case let word?:
                if let command = misspelledCommand(word) {
                    throw CLIError(.usage, "'\(word)' is neither a command nor a file; did you mean '\(command)'?")
                }
                return try PlayCommand.run(arguments).rawValue
            }
        } catch let error as CLIError {
            StandardStream.error.write("guard-play: \(error.message)\n")
            return error.code.rawValue
        } catch {
            StandardStream.error.write("guard-play: \(error)\n")
            return ExitCode.failure.rawValue
        }
    }

    /// The subcommands, for suggestions.
    static let commands = ["package", "verify", "catalogue", "serve", "tokens", "watermark", "help", "version"]

    /// The command `word` was likely meant to be, when it names no file and is a typo of one
    /// (`pakage`); nil otherwise, so a missing media file still gets its own message.
    static func misspelledCommand(_ word: String) -> String? {
        guard !word.hasPrefix("-"), !FileManager.default.fileExists(atPath: word) else { return nil }
        return Suggestion.closest(to: word, among: commands)
    }

    static func helpText(for topic: String?) -> String {
        switch topic {
        case "package": PackageCommand.help
        case "verify": VerifyCommand.help
        case "catalogue": CatalogueCommand.help
        case "serve": ServeCommand.help
        case "tokens": TokensCommand.help
        case "watermark": WatermarkCommand.help
        case "play": PlayCommand.help
        default: usage + "\n\n" + PlayCommand.help
        }
    }
}
