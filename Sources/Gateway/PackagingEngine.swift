/// What a packaging job asks of the packager.
public struct PackagingWork: Sendable, Equatable {
    /// The input media file (absolute path, inside the gateway's input root).
    public let input: String
    /// Where the HLS output goes. It does not exist yet; the engine must build it beside itself and
    /// rename it into place only when complete, leaving nothing there when it fails or is cancelled.
    public let outputDirectory: String
    /// The 16-byte content key.
    public let key: [UInt8]
    /// The key's ID (32 hex digits).
    public let kid: String
    /// The URI the playlists should give for the key; the gateway rewrites it per session.
    public let keyURI: String
    /// The key URI with `{kid}` for the key ID, which every key period's key line fills in.
    public let keyURITemplate: String
    /// The container, encryption and key period asked for.
    public let options: PackagingJobOptions

    /// Work for one packaging run; the template defaults to `keyURI` with `{kid}` for `kid`.
    public init(
        input: String, outputDirectory: String, key: [UInt8], kid: String, keyURI: String,
        keyURITemplate: String? = nil, options: PackagingJobOptions = PackagingJobOptions()
    ) {
        self.input = input
        self.outputDirectory = outputDirectory
        self.key = key
        self.kid = kid
        self.keyURI = keyURI
        self.keyURITemplate = keyURITemplate ?? keyURI.replacing(kid, with: "{kid}")
        self.options = options
    }
}

/// A content key a packaging run used: the job's own first key, and under rotation one per key period.
public struct PackagedKey: Sendable, Equatable {
    /// The key ID (32 hex digits).
    public let kid: String
    /// The 16-byte content key.
    public let key: [UInt8]

    /// The key `key` with ID `kid`.
    public init(kid: String, key: [UInt8]) {
        self.kid = kid
        self.key = key
    }
}

/// What a finished packaging run produced: every key its output names and the container it wrote, which
/// for a job that named none depends on the input (HEVC gets `fmp4`, as `guard-play package` gives it).
public struct PackagingOutcome: Sendable, Equatable {
    /// The work's own key and, under a key period, each later period's.
    public let keys: [PackagedKey]
    /// `ts` or `fmp4`.
    public let container: String

    /// An outcome of `keys` in `container`.
    public init(keys: [PackagedKey], container: String) {
        self.keys = keys
        self.container = container
    }
}

/// A packaging run that did not finish.
public struct PackagingFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// One sentence saying why.
    public let message: String
    /// True when it stopped because it was asked to.
    public let cancelled: Bool

    /// A failure with its reason.
    public init(_ message: String, cancelled: Bool = false) {
        self.message = message
        self.cancelled = cancelled
    }

    public var description: String { message }
}

/// The packager as packaging jobs use it, in-process. Runs on a job worker thread the gateway owns.
public protocol PackagingEngine: Sendable {
    /// Packages `work.input` as encrypted HLS into `work.outputDirectory`, reporting progress from 0
    /// to 1 and stopping soon after `isCancelled` turns true; returns every key the output names (the
    /// work's own and, under a key period, each later period's), for the gateway to store, and the
    /// container it wrote, for the job to report.
    func package(
        _ work: PackagingWork, progress: @escaping @Sendable (Double) -> Void,
        isCancelled: @escaping @Sendable () -> Bool
    ) throws(PackagingFailure) -> PackagingOutcome
}
