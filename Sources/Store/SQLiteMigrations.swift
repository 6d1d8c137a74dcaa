/// The schema, one migration per version. A database's `PRAGMA user_version` says how many have been
/// applied; each runs in its own transaction, so a crash leaves the database at one version or the
/// next, never between.
enum SQLiteMigrations {
    static let all: [String] = [
        """
        CREATE TABLE assets (
            id TEXT PRIMARY KEY,
            directory TEXT NOT NULL,
            deny_keys_while_capturing INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE content_keys (
            kid TEXT PRIMARY KEY,
            asset_id TEXT NOT NULL,
            wrapped BLOB NOT NULL,
            uri TEXT,
            created_at REAL NOT NULL
        );
        CREATE INDEX content_keys_by_asset ON content_keys(asset_id);
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            asset_id TEXT NOT NULL,
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            revoked_at REAL
        );
        CREATE INDEX sessions_by_expiry ON sessions(expires_at);
        CREATE TABLE api_tokens (
            id TEXT PRIMARY KEY,
            secret_hash BLOB NOT NULL,
            scopes TEXT NOT NULL,
            name TEXT NOT NULL,
            created_at REAL NOT NULL,
            revoked_at REAL
        );
        CREATE TABLE packaging_jobs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            idempotency_key TEXT UNIQUE,
            fingerprint TEXT NOT NULL,
            input TEXT NOT NULL,
            asset_id TEXT NOT NULL,
            deny_keys_while_capturing INTEGER NOT NULL,
            kid TEXT,
            state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
            progress REAL NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            output TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX packaging_jobs_by_state ON packaging_jobs(state, seq);
        CREATE TABLE audit (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            action TEXT NOT NULL,
            outcome TEXT NOT NULL,
            reason TEXT,
            asset_id TEXT,
            kid TEXT,
            session_id TEXT,
            remote TEXT
        );
        """,
        // Refusals that carried no valid token are counted, not stored one row each: one row per
        // minute, reason and client address. The index on `audit.at` lets retention prune cheaply.
        """
        CREATE TABLE audit_refusals (
            minute REAL NOT NULL,
            reason TEXT NOT NULL,
            remote TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (minute, reason, remote)
        );
        CREATE INDEX audit_by_time ON audit(at);
        """,
        // How each packaging job packages (container, encryption, key period), so a requeued job
        // packages as it was asked to.
        "ALTER TABLE packaging_jobs ADD COLUMN options TEXT;",
        // Revocations and changes of capture state as rows numbered per session (`sessions.event_seq`),
        // so a stream resumed with `Last-Event-ID` replays what it missed, as on PostgreSQL.
        """
        ALTER TABLE sessions ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE session_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            session_seq INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('revoked', 'capture')),
            state TEXT,
            reason TEXT,
            since REAL,
            report_seq INTEGER,
            observed_at REAL,
            lease_expires_at REAL,
            at REAL NOT NULL,
            origin TEXT NOT NULL,
            announced INTEGER NOT NULL DEFAULT 1,
            UNIQUE (session_id, session_seq)
        );
        CREATE INDEX session_events_by_time ON session_events(at);
        """,
    ]

    /// Brings `connection` up to the newest version; refuses a database from a newer GuardPlay.
    static func apply(to connection: SQLiteConnection) throws(StoreError) {
        let current = Int(try connection.query("PRAGMA user_version").first?.first?.integer ?? 0)
        guard current <= all.count else {
            throw StoreError(
                operation: "migrate(\(connection.path))",
                message: "the database is at schema version \(current), newer than this build knows (\(all.count))")
        }
        for version in current..<all.count {
            try connection.transaction { () throws(StoreError) in
                try connection.execute(all[version])
                try connection.execute("PRAGMA user_version = \(version + 1)")
            }
        }
    }
}
