import CaptureMonitor
import ControlAPI
import FoundationEssentials
import Gateway
import HTTPServer
import Player
import SystemSupport

/// The REST control server of `guard-play FILE --control ADDR`: the player routes on the gateway's HTTP
/// server, with API tokens (scope `control`) from the gateway's store under `--data`.
enum PlayerControlServer {
    /// Opens the token store and starts serving, with capture reports going to `remote`; the caller
    /// stops the returned server when playback ends. The store must exist already (the player only
    /// reads tokens, it never makes a data directory or database; SQLite gives the files it adds beside
    /// the database the database's own mode).
    static func start(player: Player, remote: RemoteCaptureSource, configuration: ServeConfiguration)
        throws(CLIError) -> HTTPServer
    {
        let log: @Sendable (String) -> Void = { message in
            StandardStream.error.write("guard-play control: \(message)\n")
        }
        let database = configuration.dataDirectory.appendingPathComponent("guardplay.db")
        if case .sqlite = configuration.storeLocation, !FileManager.default.fileExists(atPath: database) {
            throw CLIError(
                .badValue,
                "--data \(configuration.dataDirectory) holds no token store (\(database)); create a token with "
                    + "guard-play tokens create --scope control --data \(configuration.dataDirectory)")
        }
        let (store, _) = try ServeCommand.openStore(configuration)
        let adapter = PlayerControlAdapter(player: player, remote: remote)
        let router = PlayerAPI.router(
            player: adapter, state: ServiceState(), metrics: Metrics(),
            authenticate: { token in
                do { return try APITokens.authenticate(token, in: store) } catch {
                    log("store: \(error)")
                    return .failure(.invalid)
                }
            }, log: log)
        let server = GatewayAPI.server(configuration: configuration.httpServer(log: log), router: router)
        do { try server.start() } catch { throw CLIError(.failure, "--control: \(error)") }
        log("listening on http://\(ServeCommand.urlHost(configuration.host)):\(server.port)")
        if !ServeCommand.isLoopback(configuration.host) {
            // Only with --control-public: PlayCommand refuses such an address otherwise.
            log("warning: listening on \(configuration.host) over plain HTTP: tokens cross the network unencrypted")
        }
        return server
    }
}
