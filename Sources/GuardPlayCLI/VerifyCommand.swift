/// `guard-play verify`: not built yet; its issue is open.
enum VerifyCommand {
    static let help = "guard-play verify: not available yet"

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        throw CLIError(.failure, "verify is not available yet")
    }
}
