/// `guard-play serve`: not built yet; its issue is open.
enum ServeCommand {
    static let help = "guard-play serve: not available yet"

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        throw CLIError(.failure, "serve is not available yet")
    }
}
