import ControlAPI
import FoundationEssentials
import Gateway
import Glibc
import Store
import SystemSupport

/// `guard-play tokens`: creates, lists and revokes API tokens in the gateway's store.
enum TokensCommand {
    static let help = """
        usage: guard-play tokens create --scope SCOPES [--name NAME] [--data DIR | --config FILE]
               guard-play tokens list [--data DIR | --config FILE]
               guard-play tokens revoke ID [--data DIR | --config FILE]

        API tokens authorise the gateway's control routes. SCOPES is a comma-separated list of control,
        package and admin (admin allows everything). `create` prints the token once, on standard output;
        only a hash of it is stored.

          --scope SCOPES     create: the token's scopes
          --name NAME        create: a label for it, up to 100 ASCII characters (default token)
          --data DIR         the gateway's data directory (default ./guard-data)
          --kek-file FILE    its key-encryption key file (default as for serve)
          --config FILE      the gateway's configuration file, for its data directory and KEK file
        Every other `serve` option is accepted too, and ignored.
        """

    /// The gateway's options (for its store) and the token's own.
    static let options = ServeConfiguration.options + [Arguments.Option("scope"), Arguments.Option("name")]

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        let parsed = try Arguments(arguments, options: options)
        guard let action = parsed.positionals.first else {
            throw CLIError(.usage, "tokens needs an action: create, list or revoke\n\(help)")
        }
        let configuration = try ServeConfiguration.load(parsed)
        // The database and the KEK file are for this user alone.
        umask(0o077)
        switch action {
        case "create":
            guard parsed.positionals.count == 1 else { throw CLIError(.usage, "tokens create takes no arguments") }
            guard let text = parsed.value("scope") else { throw CLIError(.usage, "tokens create needs --scope") }
            guard let scopes = APITokens.parseScopes(text) else {
                throw CLIError(.badValue, "invalid value '\(text)' for --scope: expected control, package and/or admin")
            }
            let name = parsed.value("name") ?? "token"
            guard name.count <= 100, name.allSatisfy({ $0.isASCII && !$0.isNewline }) else {
                throw CLIError(.badValue, "invalid value for --name: expected up to 100 ASCII characters")
            }
            let (store, _) = try ServeCommand.openStore(configuration)
            let created: (token: String, record: APITokenRecord)
            do { created = try APITokens.create(in: store, scopes: scopes, name: name) } catch {
                throw CLIError(.failure, "\(error)")
            }
            print(created.token)
            StandardStream.error.write(
                "guard-play tokens: created \(created.record.id) (\(created.record.scopes.joined(separator: ","))); the token above is shown only once\n"
            )
        case "list":
            let (store, _) = try ServeCommand.openStore(configuration)
            let tokens: [APITokenRecord]
            do { tokens = try store.tokens() } catch { throw CLIError(.failure, "\(error)") }
            for token in tokens {
                let state = token.revokedAt == nil ? "active" : "revoked"
                print("\(token.id)\t\(token.scopes.joined(separator: ","))\t\(state)\t\(token.name)")
            }
        case "revoke":
            guard parsed.positionals.count == 2 else { throw CLIError(.usage, "tokens revoke needs a token ID") }
            let (store, _) = try ServeCommand.openStore(configuration)
            let revoked: Bool
            do { revoked = try store.revokeToken(parsed.positionals[1], at: Date()) } catch {
                throw CLIError(.failure, "\(error)")
            }
            guard revoked else { throw CLIError(.badValue, "no active token '\(parsed.positionals[1])'") }
            StandardStream.error.write("guard-play tokens: revoked \(parsed.positionals[1])\n")
        default:
            throw CLIError(.usage, "unknown tokens action '\(action)': expected create, list or revoke")
        }
        return .success
    }
}
