/// `guard-play play`: not built yet; its issue is open.
enum PlayCommand {
    static let help = "guard-play play: not available yet"

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        throw CLIError(.failure, "play is not available yet")
    }
}
