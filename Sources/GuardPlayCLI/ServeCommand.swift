import ControlAPI
import FoundationEssentials
import Gateway
import Glibc
import HTTPServer
import MediaCore
import Store
import SystemSupport

/// `guard-play serve`: the gateway. Runs until SIGTERM or SIGINT, then drains: `/readyz` answers 503
/// for the drain period, the server stops accepting and finishes what is in flight, packaging jobs in
/// progress go back to the queue, and the audit log is flushed.
enum ServeCommand {
    static let help = """
        usage: guard-play serve [--config FILE] [options]

        Runs the gateway: REST control, key delivery, HLS delivery, capture-state reports and packaging
        jobs, with its state in a SQLite database under --data or in PostgreSQL (--store).

        options (each may also be a `key = value` line in --config FILE):
          --config FILE           read options from FILE, `key = value` lines (the command line wins)
          --listen HOST:PORT      address to listen on (default 127.0.0.1:8080; port 0 picks one)
          --data DIR              database, KEK file and packaged assets (default ./guard-data)
          --store URL             keep the state in PostgreSQL at URL (postgres://USER@HOST/DB), shared by
                                  every node given the same URL and KEK, instead of SQLite under --data
                                  (default sqlite; GUARDPLAY_STORE sets it too)
          --kek-file FILE         key-encryption key file, created 0600 when missing (default: systemd's
                                  credential $CREDENTIALS_DIRECTORY/kek when there is one, else DATA/kek);
                                  the GUARDPLAY_KEK environment variable (64 hex digits) overrides it
          --watermark-key-file FILE  key choosing each session's A/B watermark variants, kept like the KEK
                                  (default: credential watermark-key, else DATA/watermark-key, created
                                  0600; GUARDPLAY_WATERMARK_KEY overrides it); every node needs the same
          --public-url URL        base of the playback URLs sessions return (default: the request's Host)
          --cors-origin ORIGIN    an origin browsers may call from (repeatable; * allows any, never with
                                  credentials)
          --input-root DIR        packaging inputs must lie inside DIR (default .), never inside --data;
                                  a --data that is or holds DIR is refused (exit 2)
          --import-root DIR       directories PUT /v1/assets/{id} may import from (repeatable)
          --session-ttl DURATION  default session lifetime (default 4h)
          --lease DURATION        how long a capture report holds (default 10s)
          --job-workers N         packaging worker threads (default 1)
          --job-lease DURATION    with --store, how long a job claim holds unless its worker renews it
                                  (every third of it); a dead node's job moves on after it (default 30s)
          --threads N             HTTP worker threads (default 4)
          --connection-limit N    open connections at most (default 1024)
          --per-ip-connection-limit N
                                  open connections from one client IP address at most (default 128;
                                  0 for none, as behind a proxy, where every client has its address)
          --idle-timeout DURATION idle connection timeout (default 30s)
          --header-timeout DURATION time a client has to send its request header (default 10s)
          --body-timeout DURATION time a client has to send a request body after its header (default 30s)
          --max-body BYTES        largest request body (default 65536)
          --drain DURATION        time /readyz reports draining before the server stops (default 5s)
          --audit-retention DURATION
                                  how long audit records are kept; older ones are pruned (default 30d)
          --trusted-proxy CIDR    a proxy whose X-Forwarded-For names the client, for the audit log and
                                  the per-client limits (repeatable; an address or range such as 10.0.0.0/8)
          --max-streams N         event streams open at most, below --connection-limit so the rest stay
                                  for other requests (default three quarters of the connection limit)
          --check-config          check the configuration and exit
        """

    /// The configuration's options and `--check-config`.
    static let options = ServeConfiguration.options + [Arguments.Option("check-config", .flag)]

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        let parsed = try Arguments(arguments, options: options)
        guard parsed.positionals.isEmpty else {
            throw CLIError(.usage, "serve takes no arguments, got '\(parsed.positionals[0])'")
        }
        let configuration = try ServeConfiguration.load(parsed)
        try configuration.checkDirectoriesApart()
        if let streams = configuration.maxStreams, streams >= configuration.connectionLimit {
            throw CLIError(
                .badValue,
                "--max-streams \(streams) must be below --connection-limit "
                    + "\(configuration.connectionLimit), so other requests keep connections of their own")
        }
        if parsed.has("check-config") {
            // The checks a real start makes on the KEK, with the same message, so a unit does not
            // pass ExecStartPre and then restart-loop.
            let source = try checkKEK(configuration)
            let watermarkSource = try secret(watermarkKeySource(configuration), check: true).source
            print(
                "configuration ok: listen \(configuration.host):\(configuration.port), data \(configuration.dataDirectory), store \(configuration.storeLocation), watermark key \(watermarkSource), kek \(source)"
            )
            return .success
        }
        return try serve(configuration)
    }

    static func serve(_ configuration: ServeConfiguration) throws(CLIError) -> ExitCode {
        let log: @Sendable (String) -> Void = { message in
            StandardStream.error.write("guard-play serve: \(message)\n")
        }
        // FFmpeg (x264's statistics after a still, say) speaks through the gateway's log, and only at
        // GUARDPLAY_FFMPEG_LOG and above: quiet unless asked, as in the CLI.
        let ffmpegLevel = ProcessInfo.processInfo.environment["GUARDPLAY_FFMPEG_LOG"] ?? "quiet"
        guard let level = MediaLog.Level(rawValue: ffmpegLevel) else {
            throw CLIError(
                .badValue,
                "invalid GUARDPLAY_FFMPEG_LOG '\(ffmpegLevel)': expected quiet, error, warning, info or debug")
        }
        MediaLog.route(level: level) { level, line in log("ffmpeg \(level): \(line)") }
        // Signals are taken by sigwait below; block them before any thread starts so every thread
        // inherits the mask and none is interrupted.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        // The database, the KEK file and packaged output are for this user alone.
        umask(0o077)

        let (store, kek) = try openStore(configuration)
        let watermarkKey = try secret(watermarkKeySource(configuration), check: false).key
        let gateway: Gateway
        do {
            gateway = try Gateway(
                configuration: GatewayConfiguration(
                    dataDirectory: configuration.dataDirectory, inputRoot: configuration.inputRoot,
                    importRoots: configuration.importRoots, sessionTTL: configuration.sessionTTL,
                    captureLease: configuration.captureLease, jobWorkers: configuration.jobWorkers
                ).withAuditAndStreamLimits(of: configuration),
                store: store, kek: kek, engine: PackagerEngine(),
                watermarkKey: watermarkKey?.derivedKey(for: "guardplay/watermark/v1"), log: log)
            try gateway.start()
        } catch {
            throw CLIError(.failure, "cannot start the gateway: \(error)")
        }
        let state = ServiceState()
        let router = GatewayAPI.router(
            gateway: gateway, state: state, publicURL: configuration.publicURL, corsOrigins: configuration.corsOrigins,
            log: log)
        let server = GatewayAPI.server(configuration: configuration.httpServer(log: log), router: router)
        do { try server.start() } catch {
            gateway.stop()
            throw CLIError(.failure, "\(error)")
        }
        // Written straight to the descriptor (not buffered) so a supervisor or test sees it at once.
        StandardStream.output.write(
            "guard-play serve: listening on http://\(urlHost(configuration.host)):\(server.port)\n")
        if !isLoopback(configuration.host) {
            log(
                "warning: listening on \(configuration.host) over plain HTTP: tokens and keys cross the network "
                    + "unencrypted; put TLS in front (deploy/nginx) and listen on 127.0.0.1")
        }

        var received: Int32 = 0
        sigwait(&signals, &received)
        log("\(received == SIGTERM ? "SIGTERM" : "SIGINT"): draining for \(configuration.drain) s")
        state.beginDraining()
        var timeout = timespec(
            tv_sec: Int(configuration.drain),
            tv_nsec: Int((configuration.drain.truncatingRemainder(dividingBy: 1)) * 1e9))
        // A second signal ends the drain period early.
        _ = sigtimedwait(&signals, nil, &timeout)
        server.stop(grace: 10)
        gateway.stop()
        log("stopped")
        return .success
    }

    /// Opens the store (`--store`, else SQLite under the data directory) with the KEK from
    /// GUARDPLAY_KEK or the KEK file.
    static func openStore(_ configuration: ServeConfiguration) throws(CLIError) -> (any Store, KeyEncryptionKey) {
        do {
            try FileManager.default.createDirectory(
                atPath: configuration.dataDirectory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw CLIError(.outputFailed, "cannot create the data directory \(configuration.dataDirectory): \(error)")
        }
        do {
            let (environment, file, credentials) = kekSource(configuration)
            let kek = try KeyEncryptionKey.load(
                environmentValue: environment, file: file, credentialsDirectory: credentials)
            return (try configuration.storeLocation.open(kek: kek), kek)
        } catch {
            throw CLIError(.failure, "\(error)")
        }
    }

    /// `openStore`'s KEK checks without creating anything; returns where the KEK comes from.
    static func checkKEK(_ configuration: ServeConfiguration) throws(CLIError) -> String {
        do {
            let (environment, file, credentials) = kekSource(configuration)
            return try KeyEncryptionKey.check(
                environmentValue: environment, file: file, credentialsDirectory: credentials)
        } catch {
            throw CLIError(.failure, "\(error)")
        }
    }

    /// Where the KEK comes from: GUARDPLAY_KEK; else --kek-file; else systemd's credential `kek`
    /// (`LoadCredential=kek:…` puts it at `$CREDENTIALS_DIRECTORY/kek`) when there is one; else DATA/kek.
    static func kekSource(_ configuration: ServeConfiguration) -> (
        environment: String?, file: String, credentials: String?
    ) {
        let environment = ProcessInfo.processInfo.environment
        let credentials = environment["CREDENTIALS_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
        let credential = credentials.map { $0 + "/kek" }.flatMap {
            FileManager.default.fileExists(atPath: $0) ? $0 : nil
        }
        let file = configuration.kekFile ?? credential ?? configuration.dataDirectory + "/kek"
        return (environment["GUARDPLAY_KEK"], file, credentials)
    }

    /// Where the watermarking key comes from, as `kekSource` for the KEK: GUARDPLAY_WATERMARK_KEY; else
    /// --watermark-key-file; else systemd's credential `watermark-key`; else DATA/watermark-key.
    static func watermarkKeySource(_ configuration: ServeConfiguration) -> (
        environment: String?, file: String, credentials: String?, variable: String
    ) {
        let environment = ProcessInfo.processInfo.environment
        let credentials = environment["CREDENTIALS_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
        let credential = credentials.map { $0 + "/watermark-key" }.flatMap {
            FileManager.default.fileExists(atPath: $0) ? $0 : nil
        }
        let file = configuration.watermarkKeyFile ?? credential ?? configuration.dataDirectory + "/watermark-key"
        return (environment["GUARDPLAY_WATERMARK_KEY"], file, credentials, "GUARDPLAY_WATERMARK_KEY")
    }

    /// A server secret kept like the KEK: loaded (created when missing), or with `check` only checked
    /// (nothing created), with where it comes from.
    static func secret(
        _ source: (environment: String?, file: String, credentials: String?, variable: String), check: Bool
    ) throws(CLIError) -> (key: KeyEncryptionKey?, source: String) {
        do {
            if check {
                let from = try KeyEncryptionKey.check(
                    environmentValue: source.environment, file: source.file, credentialsDirectory: source.credentials,
                    variable: source.variable)
                return (nil, from)
            }
            let key = try KeyEncryptionKey.load(
                environmentValue: source.environment, file: source.file, credentialsDirectory: source.credentials,
                variable: source.variable)
            return (key, source.environment == nil ? source.file : source.variable)
        } catch {
            throw CLIError(.failure, "\(error)")
        }
    }

    /// Whether `host` is a loopback address (127.0.0.0/8, ::1 or `localhost`): anything else may be
    /// reachable from the network.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) } == [UInt8](repeating: 0, count: 15) + [1]
        }
        return false
    }

    static func urlHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
}

extension ServeConfiguration {
    /// The HTTP server's address and limits.
    func httpServer(log: @escaping @Sendable (String) -> Void) -> HTTPServerConfiguration {
        var server = HTTPServerConfiguration(
            host: host, port: port, threads: threads, connectionLimit: connectionLimit,
            perClientConnectionLimit: perIPConnectionLimit, idleTimeoutSeconds: Int(idleTimeout.rounded(.up)),
            headerTimeout: headerTimeout, bodyTimeout: bodyTimeout, maxBodyBytes: maxBodyBytes, log: log)
        if case .success(let proxies) = TrustedProxies.parse(trustedProxies) { server.trustedProxies = proxies }
        return server
    }

    /// Event streams open at most: as configured, or three quarters of the connection limit, so a
    /// quarter of the connections stays for requests that are not streams.
    var streamLimit: Int { maxStreams ?? connectionLimit * 3 / 4 }
}

extension GatewayConfiguration {
    /// This configuration with the audit retention, the stream limit and the job lease `serve` was given.
    func withAuditAndStreamLimits(of serve: ServeConfiguration) -> GatewayConfiguration {
        var configuration = self
        configuration.auditRetention = serve.auditRetention
        configuration.maxStreams = serve.streamLimit
        configuration.jobLease = serve.jobLease
        return configuration
    }
}
