/// `guard-play package`: not built yet; its issue is open.
enum PackageCommand {
    static let help = "guard-play package: not available yet"

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        throw CLIError(.failure, "package is not available yet")
    }
}
