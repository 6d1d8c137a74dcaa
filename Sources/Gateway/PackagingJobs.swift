import Crypto
import Dispatch
import FoundationEssentials
import Glibc
import MediaCore
import Packager
public import Store
import Synchronization
import SystemSupport
import ThreadSupport

/// Packaging jobs: a persistent queue in the store and a bounded pool of worker threads that run the
/// packager in-process.
///
/// A job's output goes to `assets/{job}-{attempt}`, which the engine builds beside itself (as
/// `assets/.{job}-{attempt}…`) and renames into place only when complete; the asset record is switched
/// to it afterwards, so an interrupted job never leaves a half-written directory where a finished one
/// is expected. On start, jobs a dead process left `running` are requeued (or failed after
/// `maxAttempts`), and directories no asset refers to, finished or partial, are removed; a job
/// requeued at any time loses the partial output of the attempt that was interrupted. The job's
/// content key is stored, wrapped, before packaging starts.
///
/// On a store that nodes share, a claim is a lease judged by the database's clock: the worker renews
/// it every third of `jobLease` and stops the job once it no longer holds it, and every node looks
/// for lapsed leases (a node killed mid-job) while it runs, requeueing those jobs for any node to
/// finish with the key the first attempt stored.
public final class PackagingJobs: Sendable {
    private let store: any Store
    private let catalog: AssetCatalog
    private let engine: (any PackagingEngine)?
    private let configuration: GatewayConfiguration
    private let clock: any GatewayClock
    private let log: @Sendable (String) -> Void
    private let onAssetReady: @Sendable (AssetRecord) -> Void

    private struct Live {
        var progress: [String: Double] = [:]
        var cancelled: Set<String> = []
        var running = false
        var shuttingDown = false
    }

    private let live = Mutex(Live())
    /// Looks for jobs whose lease lapsed on a shared store.
    private let reclaimer = PeriodicThread(name: "job-reclaimer", interval: 1)
    private let wake = DispatchSemaphore(value: 0)
    private let workersExited = DispatchSemaphore(value: 0)
    private let workerCount = Mutex(0)

    init(
        store: any Store, catalog: AssetCatalog, engine: (any PackagingEngine)?, configuration: GatewayConfiguration,
        clock: any GatewayClock, log: @escaping @Sendable (String) -> Void,
        onAssetReady: @escaping @Sendable (AssetRecord) -> Void
    ) {
        self.store = store
        self.catalog = catalog
        self.engine = engine
        self.configuration = configuration
        self.clock = clock
        self.log = log
        self.onAssetReady = onAssetReady
    }

    /// True when this build can package.
    public var isAvailable: Bool { engine != nil }

    var assetsDirectory: String { configuration.dataDirectory + "/assets" }

    // MARK: Requests

    /// Queues a job to package `input` (a path relative to the input root) as `asset`. With an
    /// idempotency key already used for the same request, returns that job with `created` false.
    public func submit(
        input: String, asset: String, denyKeysWhileCapturing: Bool, idempotencyKey: String?,
        options: PackagingJobOptions = PackagingJobOptions()
    ) throws(GatewayError) -> (job: JobRecord, created: Bool) {
        guard engine != nil else {
            throw GatewayError(
                .unavailable, code: "packaging-unavailable", detail: "This gateway was built without a packager.")
        }
        guard Identifier.isValid(asset) else {
            throw GatewayError(.invalid, code: "invalid-asset-id", detail: "asset must match [A-Za-z0-9_-]{1,64}.")
        }
        _ = try resolveInput(input)
        let options = try options.validated()
        // The defaults add nothing, so a retry of a job stored before options existed still matches.
        let asked = options == PackagingJobOptions() ? "" : "\n" + options.stored
        let fingerprint = Digest.sha256(Array("\(input)\n\(asset)\n\(denyKeysWhileCapturing)\(asked)".utf8))
            .hexString
        let now = clock.now()
        let job = JobRecord(
            id: Identifier.random(prefix: "job_"), idempotencyKey: idempotencyKey, fingerprint: fingerprint,
            input: input, assetID: asset, denyKeysWhileCapturing: denyKeysWhileCapturing,
            kid: Identifier.randomHex(16), createdAt: now, updatedAt: now,
            options: options == PackagingJobOptions() ? nil : options.stored)
        switch try stored(log, { () throws(StoreError) in try store.insertJob(job) }) {
        case .created(let created):
            wake.signal()
            return (created, true)
        case .existing(let existing):
            guard existing.fingerprint == fingerprint else {
                throw GatewayError(
                    .invalid, code: "idempotency-key-reused",
                    detail: "This Idempotency-Key was used for a different request.")
            }
            return (withLiveProgress(existing), false)
        }
    }

    /// The job with `id`, with its live progress when it is running.
    public func job(_ id: String) throws(GatewayError) -> JobRecord? {
        try stored(log) { () throws(StoreError) in try store.job(id) }.map(withLiveProgress)
    }

    /// Up to `limit` jobs older than the cursor job (newest first), and the cursor for the next page.
    public func list(after cursor: Int64?, limit: Int) throws(GatewayError) -> (jobs: [JobRecord], next: Int64?) {
        let jobs = try stored(log) { () throws(StoreError) in try store.jobs(before: cursor, limit: limit + 1) }
        let page = Array(jobs.prefix(limit)).map(withLiveProgress)
        return (page, jobs.count > limit ? page.last?.seq : nil)
    }

    /// Cancels a queued or running job; a running one stops at the packager's next check. Returns the
    /// job as it now stands, or nil when there is no such job.
    public func cancel(_ id: String) throws(GatewayError) -> JobRecord? {
        guard let job = try stored(log, { () throws(StoreError) in try store.job(id) }) else { return nil }
        guard !job.state.isFinal else {
            throw GatewayError(.conflict, code: "job-finished", detail: "The job has already \(job.state.rawValue).")
        }
        live.withLock { _ = $0.cancelled.insert(id) }
        _ = try stored(log) { () throws(StoreError) in try store.finishJob(id, state: .cancelled, at: clock.now()) }
        return try stored(log) { () throws(StoreError) in try store.job(id) }
    }

    private func withLiveProgress(_ job: JobRecord) -> JobRecord {
        guard job.state == .running, let progress = live.withLock({ $0.progress[job.id] }) else { return job }
        var copy = job
        copy.progress = progress
        return copy
    }

    /// The input's absolute path: `input` must be relative, made of plain names (no `.` or `..`),
    /// and resolve (symbolic links followed) to a regular file inside the input root.
    func resolveInput(_ input: String) throws(GatewayError) -> String {
        let components = input.split(separator: "/", omittingEmptySubsequences: false)
        let plain = components.allSatisfy { component in
            component != "." && component != ".." && AssetCatalog.isServableName(String(component))
        }
        guard !input.isEmpty, input.utf8.count <= 1024, components.count <= 16, plain else {
            throw GatewayError(
                .invalid, code: "invalid-input-path",
                detail: "input must be a relative path of plain names ([A-Za-z0-9._-], no '.' or '..').")
        }
        guard let root = canonicalPath(configuration.inputRoot),
            let resolved = canonicalPath(configuration.inputRoot + "/" + input)
        else {
            throw GatewayError(.invalid, code: "input-not-found", detail: "input does not exist under the input root.")
        }
        var info = stat()
        guard resolved.hasPrefix(root.hasSuffix("/") ? root : root + "/"), stat(resolved, &info) == 0,
            info.st_mode & S_IFMT == S_IFREG
        else {
            throw GatewayError(
                .invalid, code: "input-not-found", detail: "input is not a regular file under the input root.")
        }
        // The data directory holds the gateway's own files (its database, its KEK, job outputs it deletes
        // and replaces): none of them may be an input, so no job's output can land on one.
        if PathIdentity(configuration.dataDirectory).contains(PathIdentity(resolved)) {
            throw GatewayError(
                .invalid, code: "input-in-data-directory",
                detail: "input lies inside the gateway's data directory, among its own files; package media from "
                    + "outside it.")
        }
        return resolved
    }

    // MARK: Workers

    /// Recovers jobs a dead process left running, clears orphaned output, and starts the workers.
    func start() throws(StoreError) {
        try recoverInterruptedJobs()
        // On a shared store, the output of a job another node is running is not an orphan.
        let active = store.isShared ? try store.jobs(in: .running) + store.jobs(in: .queued) : []
        removeOrphanedOutput(referenced: Set(try store.assets().map(\.directory)), activeJobs: Set(active.map(\.id)))
        guard engine != nil else { return }
        if store.isShared {
            reclaimer.start(firstTickAfter: 1) { [self] in
                do { try recoverInterruptedJobs() } catch { log("jobs: \(error)") }
            }
        }
        live.withLock { $0.running = true }
        let count = max(1, configuration.jobWorkers)
        workerCount.withLock { $0 = count }
        for index in 0..<count {
            startThread(name: "packaging-\(index)") { [self] in
                work()
                workersExited.signal()
            }
        }
    }

    /// Stops the workers; a job in progress is interrupted and put back in the queue for next time.
    func stop() {
        let count = workerCount.withLock { count in
            defer { count = 0 }
            return count
        }
        live.withLock { live in
            live.running = false
            live.shuttingDown = true
        }
        reclaimer.stop()
        for _ in 0..<count { wake.signal() }
        for _ in 0..<count { workersExited.wait() }
    }

    /// Requeues (or fails, after `maxAttempts`) the jobs a dead process left running: on SQLite every
    /// running job, at start; on a shared store those whose lease lapsed, at any time.
    private func recoverInterruptedJobs() throws(StoreError) {
        let recovered = try store.recoverInterruptedJobs(maxAttempts: configuration.maxJobAttempts, at: clock.now())
        for job in recovered {
            log("jobs: \(job.id) was interrupted; now \(job.state.rawValue)")
            // The interrupted attempt's partial output, which its packager built beside the attempt's
            // directory; nothing else (a finished output or an input) matches its name.
            guard Identifier.isValid(job.id) else { continue }
            for name in PackagingJob.removePartialOutput(of: "\(assetsDirectory)/\(job.id)-\(job.attempts)") {
                log("jobs: removed \(name), the partial output of \(job.id)'s interrupted attempt \(job.attempts)")
            }
        }
        if recovered.contains(where: { $0.state == .queued }) { wake.signal() }
    }

    private func work() {
        while live.withLock({ $0.running }) {
            let claimed: JobRecord?
            do { claimed = try store.claimNextJob(at: clock.now(), lease: configuration.jobLease) } catch {
                log("jobs: \(error)")
                claimed = nil
            }
            guard let job = claimed else {
                _ = wake.wait(timeout: .now() + 1)
                continue
            }
            run(job)
        }
    }

    private func run(_ job: JobRecord) {
        let id = job.id
        let attemptDirectory = "\(assetsDirectory)/\(id)-\(job.attempts)"
        log("jobs: \(id) claimed (attempt \(job.attempts))")
        live.withLock { $0.progress[id] = 0 }
        defer { live.withLock { _ = $0.progress.removeValue(forKey: id) } }
        let renewal = renewLease(of: job)
        defer { renewal?.stop() }
        var resolvedInput: String?
        do {
            let input = try resolveInput(job.input)
            resolvedInput = input
            let kid = job.kid ?? Identifier.randomHex(16)
            let key = try contentKey(kid: kid, asset: job.assetID)
            try FileManager.default.createDirectory(atPath: assetsDirectory, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: attemptDirectory)
            let work = PackagingWork(
                input: input, outputDirectory: attemptDirectory, key: key, kid: kid,
                keyURI: "\(configuration.keyPathPrefix)\(kid)", keyURITemplate: "\(configuration.keyPathPrefix){kid}",
                options: PackagingJobOptions(stored: job.options))
            let used = try engine?.package(work, progress: progressReporter(id), isCancelled: cancellationCheck(id))
            // Cancelled (or, on a shared store, taken over) after the packager's last check: not published.
            if live.withLock({ $0.cancelled.contains(id) }) { throw PackagingFailure("stopped", cancelled: true) }
            // Every key period's key is stored, wrapped, before the asset points at the output.
            try storeKeys((used?.keys ?? []).filter { $0.kid != kid }, asset: job.assetID)
            if let used { try recordContainer(used.container, of: job) }
            try publish(job, directory: attemptDirectory)
            _ = try store.finishJob(id, state: .succeeded, output: attemptDirectory, at: clock.now())
            log("jobs: \(id) packaged \(job.input) as \(job.assetID)")
        } catch let failure as PackagingFailure where failure.cancelled {
            try? FileManager.default.removeItem(atPath: attemptDirectory)
            if live.withLock({ $0.shuttingDown && !$0.cancelled.contains(id) }) {
                _ = try? store.requeueJob(id, at: clock.now())
                log("jobs: \(id) interrupted by shutdown; requeued")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: attemptDirectory)
            let message = (error as? GatewayError)?.detail ?? "\(error)"
            let shown = clientMessage(message, input: resolvedInput, as: job.input)
            _ = try? store.finishJob(id, state: .failed, error: shown, at: clock.now())
            log("jobs: \(id) failed: \(message)")
        }
        live.withLock { _ = $0.cancelled.remove(id) }
    }

    /// `message` as the client may read it: the input named as the client gave it (`given`, relative
    /// to the input root) instead of its absolute path `resolved`, and no other path of the server's
    /// input root or data directory; the log keeps the full message.
    func clientMessage(_ message: String, input resolved: String?, as given: String) -> String {
        var shown = message
        if let resolved { shown = shown.replacing(resolved, with: given) }
        let roots = [configuration.inputRoot, configuration.dataDirectory].flatMap { [canonicalPath($0), $0] }
        for case let root? in roots where !root.isEmpty && root != "/" {
            shown = shown.replacing(root.hasSuffix("/") ? root : root + "/", with: "")
        }
        return shown
    }

    /// On a shared store, a thread that renews the job's lease every third of `jobLease` and, once this
    /// attempt no longer holds the job (its lease lapsed and another node took it), stops it as a
    /// cancellation would; nil on SQLite.
    private func renewLease(of job: JobRecord) -> PeriodicThread? {
        guard store.isShared else { return nil }
        let lease = configuration.jobLease
        return PeriodicThread(name: "job-lease", interval: lease / 3, firstTickAfter: lease / 3) { [self] in
            do {
                guard try !store.renewJobLease(job.id, attempt: job.attempts, lease: lease) else { return }
                log("jobs: \(job.id) attempt \(job.attempts) lost its lease; stopping it")
                live.withLock { _ = $0.cancelled.insert(job.id) }
            } catch {
                // Unreachable for now: the lease runs on, and lapses if the database stays away.
                log("jobs: \(job.id): lease not renewed: \(error)")
            }
        }
    }

    /// The job's key: the stored one when an earlier attempt made it (on this node or, on a shared
    /// store, another), otherwise a fresh one, stored wrapped before any output refers to it.
    private func contentKey(kid: String, asset: String) throws -> [UInt8] {
        if let existing = catalog.key(kid) { return existing.key }
        if let stored = try store.key(kid) {
            catalog.addKey(stored)
            return stored.key
        }
        let record = ContentKeyRecord(kid: kid, assetID: asset, key: try SecureRandom.bytes(16))
        try store.saveKey(record)
        catalog.addKey(record)
        return record.key
    }

    /// Names the container the job's output is in among its stored options when the job named none and
    /// got another than the default (HEVC input is packaged as fMP4), so the job says what it produced.
    private func recordContainer(_ container: String, of job: JobRecord) throws {
        var options = PackagingJobOptions(stored: job.options)
        guard options.container != container else { return }
        options.container = container
        options.containerIsDefault = false
        try stored(log) { () throws(StoreError) in
            try store.setJobOptions(job.id, options: options.stored, at: clock.now())
        }
    }

    /// Stores the later key periods' keys a run drew, wrapped, for the asset.
    private func storeKeys(_ keys: [PackagedKey], asset: String) throws {
        for key in keys {
            let record = ContentKeyRecord(kid: key.kid, assetID: asset, key: key.key)
            try store.saveKey(record)
            catalog.addKey(record)
        }
    }

    /// Points the asset at the new directory, then removes the directory it replaces.
    private func publish(_ job: JobRecord, directory: String) throws {
        let now = clock.now()
        let previous = try store.asset(job.assetID)
        let record = AssetRecord(
            id: job.assetID, directory: directory, denyKeysWhileCapturing: job.denyKeysWhileCapturing,
            createdAt: previous?.createdAt ?? now, updatedAt: now)
        try store.saveAsset(record)
        onAssetReady(record)
        if let old = previous?.directory, old != directory, old.hasPrefix(assetsDirectory + "/") {
            try? FileManager.default.removeItem(atPath: old)
        }
    }

    private func progressReporter(_ id: String) -> @Sendable (Double) -> Void {
        let lastStored = Mutex(0.0)
        return { [self] value in
            let progress = min(max(value, 0), 1)
            live.withLock { $0.progress[id] = progress }
            let due = lastStored.withLock { last -> Bool in
                guard progress - last >= 0.05 else { return false }
                last = progress
                return true
            }
            if due { try? store.setJobProgress(id, progress: progress, at: clock.now()) }
        }
    }

    private func cancellationCheck(_ id: String) -> @Sendable () -> Bool {
        { [self] in live.withLock { $0.cancelled.contains(id) || $0.shuttingDown } }
    }

    /// Removes partial outputs and finished outputs no asset refers to, but none of a job in
    /// `activeJobs` (queued or running on another node sharing the store).
    private func removeOrphanedOutput(referenced: Set<String>, activeJobs: Set<String>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: assetsDirectory) else { return }
        for name in names where name.hasPrefix("job_") || name.hasPrefix(".job_") {
            let path = "\(assetsDirectory)/\(name)"
            let job = name.drop { $0 == "." }.prefix { $0 != "-" && $0 != "." }
            if !referenced.contains(path) && !activeJobs.contains(String(job)) {
                try? FileManager.default.removeItem(atPath: path)
                log("jobs: removed unreferenced output \(name)")
            }
        }
    }
}

/// The absolute path with every symbolic link, `.` and `..` resolved (`realpath`), or nil when it
/// does not exist.
func canonicalPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}
