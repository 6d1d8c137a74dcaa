import Synchronization

/// Why an event stream was not admitted.
public enum StreamRefusal: String, Error, Sendable, Equatable {
    /// The session already has its most streams open.
    case perSession = "too-many-session-streams"
    /// The token already holds its most streams open.
    case perToken = "too-many-token-streams"
    /// The gateway already has its most streams open.
    case total = "too-many-streams"
}

/// How many event streams may be open: per session, per token (session or API token) and in all.
/// The total stays below the server's connection limit, so the connections left over are a reserve
/// that only ordinary requests (keys, playlists, `/livez`, an operator's revoke) can take.
public final class StreamQuota: Sendable {
    /// A stream's place in the quota; give it back once with `release`.
    public final class Ticket: Sendable {
        private let quota: StreamQuota
        private let session: String
        private let holder: String
        private let released = Mutex(false)

        init(quota: StreamQuota, session: String, holder: String) {
            self.quota = quota
            self.session = session
            self.holder = holder
        }

        /// Gives the place back; later calls do nothing.
        public func release() {
            let first = released.withLock { released in
                defer { released = true }
                return !released
            }
            if first { quota.give(session: session, holder: holder) }
        }
    }

    struct Counts {
        var bySession: [String: Int] = [:]
        var byHolder: [String: Int] = [:]
        var total = 0
    }

    /// Streams per session at most.
    public let perSession: Int
    /// Streams per token at most.
    public let perToken: Int
    /// Streams in all at most.
    public let total: Int
    private let counts = Mutex(Counts())

    /// A quota with the given limits.
    public init(perSession: Int, perToken: Int, total: Int) {
        self.perSession = perSession
        self.perToken = perToken
        self.total = total
    }

    /// A place for a stream of `session` opened with the token `holder`, or which limit is reached.
    public func admit(session: String, holder: String) -> Result<Ticket, StreamRefusal> {
        let refusal = counts.withLock { counts -> StreamRefusal? in
            if counts.total >= total { return .total }
            if counts.bySession[session, default: 0] >= perSession { return .perSession }
            if counts.byHolder[holder, default: 0] >= perToken { return .perToken }
            counts.total += 1
            counts.bySession[session, default: 0] += 1
            counts.byHolder[holder, default: 0] += 1
            return nil
        }
        if let refusal { return .failure(refusal) }
        return .success(Ticket(quota: self, session: session, holder: holder))
    }

    /// Streams open now.
    public var open: Int { counts.withLock { $0.total } }

    private func give(session: String, holder: String) {
        counts.withLock { counts in
            counts.total -= 1
            counts.bySession[session, default: 1] -= 1
            if counts.bySession[session] == 0 { counts.bySession[session] = nil }
            counts.byHolder[holder, default: 1] -= 1
            if counts.byHolder[holder] == 0 { counts.byHolder[holder] = nil }
        }
    }
}
