public import FoundationEssentials

/// What `insertJob` did.
public enum JobInsertion: Sendable, Equatable {
    /// A new job was stored.
    case created(JobRecord)
    /// A job with the same idempotency key already existed; it is returned unchanged.
    case existing(JobRecord)
}

extension SQLStore {
    /// Stores `job`, unless a job with its idempotency key exists: then that job is returned.
    public func insertJob(_ job: JobRecord) throws(StoreError) -> JobInsertion {
        try with { database throws(StoreError) in
            try database.transaction { () throws(StoreError) -> JobInsertion in
                if let key = job.idempotencyKey,
                    let row = try database.query("\(Self.jobColumns) WHERE idempotency_key = ?", [.text(key)]).first
                {
                    return .existing(Self.job(from: row))
                }
                try database.query(
                    """
                    INSERT INTO packaging_jobs (id, idempotency_key, fingerprint, input, asset_id,
                        deny_keys_while_capturing, kid, state, progress, attempts, error, output, created_at, updated_at,
                        options)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .text(job.id), optionalText(job.idempotencyKey), .text(job.fingerprint), .text(job.input),
                        .text(job.assetID), .integer(job.denyKeysWhileCapturing ? 1 : 0), optionalText(job.kid),
                        .text(job.state.rawValue), .real(job.progress), .integer(Int64(job.attempts)),
                        optionalText(job.error), optionalText(job.output), .real(job.createdAt.timeIntervalSince1970),
                        .real(job.updatedAt.timeIntervalSince1970), optionalText(job.options),
                    ])
                let row = try database.query("\(Self.jobColumns) WHERE id = ?", [.text(job.id)])
                return .created(Self.job(from: row[0]))
            }
        }
    }

    /// The job with `id`, or nil.
    public func job(_ id: String) throws(StoreError) -> JobRecord? {
        try with { database throws(StoreError) in
            try database.query("\(Self.jobColumns) WHERE id = ?", [.text(id)]).first.map(Self.job(from:))
        }
    }

    /// Up to `limit` jobs created before the job at `seq` (all when nil), newest first.
    public func jobs(before seq: Int64?, limit: Int) throws(StoreError) -> [JobRecord] {
        try with { database throws(StoreError) in
            try database.query(
                "\(Self.jobColumns) WHERE seq < ? ORDER BY seq DESC LIMIT ?",
                [.integer(seq ?? Int64.max), .integer(Int64(limit))]
            ).map(Self.job(from:))
        }
    }

    /// How many jobs are in each state.
    public func jobCounts() throws(StoreError) -> [JobState: Int] {
        try with { database throws(StoreError) in
            var counts: [JobState: Int] = [:]
            for row in try database.query("SELECT state, count(*) FROM packaging_jobs GROUP BY state") {
                if let state = JobState(rawValue: row[0].text ?? "") { counts[state] = Int(row[1].integer ?? 0) }
            }
            return counts
        }
    }

    /// Jobs in `state`, oldest first.
    public func jobs(in state: JobState) throws(StoreError) -> [JobRecord] {
        try with { database throws(StoreError) in
            try database.query("\(Self.jobColumns) WHERE state = ? ORDER BY seq", [.text(state.rawValue)]).map(
                Self.job(from:))
        }
    }

    /// Marks the oldest queued job running, counting the attempt, and returns it; nil when none waits.
    /// On PostgreSQL the row is locked with `FOR UPDATE SKIP LOCKED`, so two nodes never claim one
    /// job, and the claim takes a lease of `lease` seconds from the database's clock that the worker
    /// renews (`renewJobLease`).
    public func claimNextJob(at date: Date, lease: TimeInterval) throws(StoreError) -> JobRecord? {
        try with { database throws(StoreError) in
            try database.transaction { () throws(StoreError) -> JobRecord? in
                let lock = dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
                guard
                    let row = try database.query(
                        "\(Self.jobColumns) WHERE state = 'queued' ORDER BY seq LIMIT 1\(lock)"
                    ).first
                else { return nil }
                let job = Self.job(from: row)
                try database.query(
                    "UPDATE packaging_jobs SET state = 'running', attempts = attempts + 1, progress = 0, updated_at = ?"
                        + "\(leaseRenewal) WHERE id = ?",
                    [.real(date.timeIntervalSince1970)] + leaseValue(lease) + [.text(job.id)])
                return try database.query("\(Self.jobColumns) WHERE id = ?", [.text(job.id)]).first.map(Self.job(from:))
            }
        }
    }

    /// Renews the lease of attempt `attempt` of a running job; false when that attempt no longer
    /// holds it. On SQLite, whose one process owns every job, nothing lapses: true while it runs.
    public func renewJobLease(_ id: String, attempt: Int, lease: TimeInterval) throws(StoreError) -> Bool {
        try changed(
            "UPDATE packaging_jobs SET state = state\(leaseRenewal) WHERE id = ? AND state = 'running' AND attempts = ?",
            leaseValue(lease) + [.text(id), .integer(Int64(attempt))])
    }

    /// Records a running job's progress.
    public func setJobProgress(_ id: String, progress: Double, at date: Date) throws(StoreError) {
        try with { database throws(StoreError) in
            try database.query(
                "UPDATE packaging_jobs SET progress = ?, updated_at = ? WHERE id = ? AND state = 'running'",
                [.real(progress), .real(date.timeIntervalSince1970), .text(id)])
        }
    }

    /// Replaces a running job's stored options.
    public func setJobOptions(_ id: String, options: String, at date: Date) throws(StoreError) {
        try with { database throws(StoreError) in
            try database.query(
                "UPDATE packaging_jobs SET options = ?, updated_at = ? WHERE id = ? AND state = 'running'",
                [.text(options), .real(date.timeIntervalSince1970), .text(id)])
        }
    }

    /// Moves a job that is not yet final to `state`; false when it was already final (cancelled, say).
    public func finishJob(
        _ id: String, state: JobState, error: String?, output: String?, at date: Date
    ) throws(StoreError) -> Bool {
        try changed(
            """
            UPDATE packaging_jobs SET state = ?, error = ?, output = ?, updated_at = ?,
                progress = CASE WHEN ? = 'succeeded' THEN 1 ELSE progress END
            WHERE id = ? AND state IN ('queued', 'running')
            """,
            [
                .text(state.rawValue), optionalText(error), optionalText(output), .real(date.timeIntervalSince1970),
                .text(state.rawValue), .text(id),
            ])
    }

    /// Puts a running job back in the queue without counting against it (a graceful shutdown
    /// interrupted it); false when it was not running.
    public func requeueJob(_ id: String, at date: Date) throws(StoreError) -> Bool {
        try changed(
            "UPDATE packaging_jobs SET state = 'queued', progress = 0, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = ? WHERE id = ? AND state = 'running'",
            [.real(date.timeIntervalSince1970), .text(id)])
    }

    /// After a restart: jobs left `running` by a process that died go back to `queued`, or to
    /// `failed` once they have been started `maxAttempts` times. Returns the jobs it changed. On
    /// PostgreSQL, where other nodes run jobs too, only jobs whose lease has run out by the
    /// database's clock count as left.
    public func recoverInterruptedJobs(maxAttempts: Int, at date: Date) throws(StoreError) -> [JobRecord] {
        try with { database throws(StoreError) in
            try database.transaction { () throws(StoreError) -> [JobRecord] in
                let lapsed =
                    dialect == .postgres
                    ? " AND lease_expires_at < extract(epoch FROM now()) FOR UPDATE SKIP LOCKED" : ""
                let stuck = try database.query("\(Self.jobColumns) WHERE state = 'running'\(lapsed)").map(
                    Self.job(from:))
                for job in stuck {
                    if job.attempts >= maxAttempts {
                        try database.query(
                            "UPDATE packaging_jobs SET state = 'failed', error = ?, updated_at = ? WHERE id = ?",
                            [
                                .text("interrupted by a restart after \(job.attempts) attempts"),
                                .real(date.timeIntervalSince1970), .text(job.id),
                            ])
                    } else {
                        try database.query(
                            "UPDATE packaging_jobs SET state = 'queued', progress = 0, updated_at = ? WHERE id = ?",
                            [.real(date.timeIntervalSince1970), .text(job.id)])
                    }
                }
                var changed: [JobRecord] = []
                for job in stuck {
                    changed += try database.query("\(Self.jobColumns) WHERE id = ?", [.text(job.id)]).map(
                        Self.job(from:))
                }
                return changed
            }
        }
    }

    /// The assignment that sets a job's lease on PostgreSQL, `lease` seconds (its one parameter,
    /// `leaseValue`) after the database's `now()`; nothing on SQLite, whose one process owns every job.
    var leaseRenewal: String {
        dialect == .postgres ? ", lease_expires_at = extract(epoch FROM now()) + ?" : ""
    }

    /// The parameter `leaseRenewal` takes, in the place it stands in the statement.
    func leaseValue(_ lease: TimeInterval) -> [SQLValue] { dialect == .postgres ? [.real(lease)] : [] }

    static let jobColumns = """
        SELECT id, seq, idempotency_key, fingerprint, input, asset_id, deny_keys_while_capturing, kid, state,
            progress, attempts, error, output, created_at, updated_at, options FROM packaging_jobs
        """

    static func job(from row: [SQLValue]) -> JobRecord {
        JobRecord(
            id: row[0].text ?? "", seq: row[1].integer ?? 0, idempotencyKey: row[2].text,
            fingerprint: row[3].text ?? "",
            input: row[4].text ?? "", assetID: row[5].text ?? "", denyKeysWhileCapturing: row[6].integer == 1,
            kid: row[7].text, state: JobState(rawValue: row[8].text ?? "") ?? .failed, progress: row[9].real ?? 0,
            attempts: Int(row[10].integer ?? 0), error: row[11].text, output: row[12].text, createdAt: date(row[13]),
            updatedAt: date(row[14]), options: row[15].text)
    }
}
