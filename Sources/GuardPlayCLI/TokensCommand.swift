/// `guard-play tokens`: not built yet; its issue is open.
enum TokensCommand {
    static let help = "guard-play tokens: not available yet"

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        throw CLIError(.failure, "tokens is not available yet")
    }
}
