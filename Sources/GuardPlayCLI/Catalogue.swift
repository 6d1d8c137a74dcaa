import Dispatch
import FoundationEssentials
import Glibc
import Packager
import Synchronization
import SystemSupport

/// One file's outcome.
struct CatalogueResult: Sendable {
    enum Status: String, Sendable { case passed, failed, skipped }

    /// The file's path relative to DIR.
    var file: String
    var status: Status
    /// `package` or `verify`: where it failed; nil when it passed.
    var stage: String?
    /// The exit code `package` or `verify` would have given for this file.
    var exitCode: Int32
    /// Why it failed or was skipped, or the verifier's verdict.
    var message: String
    var packageSeconds: Double
    var verifySeconds: Double
    var output: String?
    var keyFile: String?
    var keyID: String?
    var segments: Int?
    var mediaSeconds: Double?
}

/// The media files under a directory, in a stable order.
enum CatalogueFiles {
    /// Names never taken for media: the fixtures' scripts and notes, and the catalogue's own outputs.
    static let textExtensions: Set<String> = ["sh", "md", "txt", "json", "xml", "yaml", "yml", "m3u8", "key"]

    /// Every regular file under `root` (symbolic links followed to files), hidden ones and text names
    /// left out, as paths relative to `root`, sorted.
    static func list(under root: String) throws(CLIError) -> [String] {
        guard let top = try? FileManager.default.contentsOfDirectory(atPath: root) else {
            throw CLIError(.inputMissing, "cannot read directory \(root)")
        }
        var files: [String] = []
        var pending = top
        while let relative = pending.popLast() {
            let name = relative.lastPathComponent
            if name.hasPrefix(".") { continue }
            let path = root + "/" + relative
            // Descends into real directories only, as the directory enumerator did: a link to a directory
            // is neither walked nor taken for a file.
            var entry = stat()
            if lstat(path, &entry) == 0, entry.st_mode & S_IFMT == S_IFDIR {
                let children = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                pending += children.map { relative + "/" + $0 }
                continue
            }
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory
            else { continue }
            if textExtensions.contains(name.pathExtension.lowercased()) { continue }
            files.append(relative)
        }
        return files.sorted()
    }
}

/// The packaging and verification of a list of files, a bounded number at once.
final class Catalogue: Sendable {
    let root: String
    let out: String
    let files: [String]
    let cancellation = PackagingCancellation()
    private let parsed: Arguments

    init(root: String, out: String, files: [String], parsed: Arguments) {
        self.root = root
        self.out = out
        self.files = files
        self.parsed = parsed
    }

    /// Runs every file on `jobs` threads; `finished` is called (serialised) as each ends. Returns the
    /// results in file order.
    func run(jobs: Int, finished: @escaping @Sendable (CatalogueResult) -> Void) -> [CatalogueResult] {
        let next = Mutex(0)
        let results = Mutex([CatalogueResult?](repeating: nil, count: files.count))
        let report = Mutex(())
        DispatchQueue.concurrentPerform(iterations: min(jobs, files.count)) { _ in
            while true {
                let index: Int? = next.withLock { value in
                    guard value < files.count else { return nil }
                    defer { value += 1 }
                    return value
                }
                guard let index else { return }
                let result = process(files[index])
                results.withLock { $0[index] = result }
                report.withLock { _ in finished(result) }
            }
        }
        return results.withLock { $0.compactMap { $0 } }
    }

    /// Packages one file and verifies the output against it.
    private func process(_ file: String) -> CatalogueResult {
        let name = file.deletingPathExtension
        let output = out + "/hls/" + name
        let keyFile = out + "/keys/" + name + ".key"
        var result = CatalogueResult(
            file: file, status: .failed, stage: "package", exitCode: ExitCode.failure.rawValue, message: "",
            packageSeconds: 0, verifySeconds: 0)
        if cancellation.isCancelled {
            result.exitCode = ExitCode.interrupted.rawValue
            result.message = "interrupted before it started"
            return result
        }
        let options: PackagingOptions
        do {
            options = try PackageCommand.packagingOptions(
                parsed, input: root + "/" + file, output: output, keyFile: keyFile)
            for directory in [
                output.deletingLastPathComponent, keyFile.deletingLastPathComponent,
            ] {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
        } catch let error as CLIError {
            result.exitCode = error.code.rawValue
            result.message = error.message
            return result
        } catch {
            result.exitCode = ExitCode.outputFailed.rawValue
            result.message = "cannot make the output's directory: \(failureText(error))"
            return result
        }
        let packageStart = Date()
        let packaged: PackagingResult
        do {
            packaged = try PackagingJob(options: options).run(cancellation: cancellation)
        } catch {
            result.packageSeconds = Date().timeIntervalSince(packageStart)
            result.exitCode = PackageCommand.exitCode(for: error.kind).rawValue
            result.message = error.message
            // Text, and a codec this run's container does not carry (HEVC in TS), are
            // skipped with the reason: the other container's run packages the latter.
            if error.kind == .inputNotMedia || error.kind == .containerUnsupported {
                result.status = .skipped
                result.stage = nil
            }
            return result
        }
        result.packageSeconds = Date().timeIntervalSince(packageStart)
        result.output = packaged.outputDirectory
        result.keyFile = packaged.keyFile
        result.keyID = packaged.encryption == .none ? nil : packaged.keyID.hexString
        result.segments = packaged.segmentCount
        result.mediaSeconds = packaged.duration

        result.stage = "verify"
        let verifyStart = Date()
        defer { result.verifySeconds = Date().timeIntervalSince(verifyStart) }
        do {
            let report = try Verifier(
                directory: packaged.outputDirectory, key: packaged.key, source: options.input,
                maxPixels: options.maxPixels
            ).run()
            result.verifySeconds = Date().timeIntervalSince(verifyStart)
            result.exitCode = VerifyCommand.exitCode(for: report).rawValue
            if report.passed {
                result.status = .passed
                result.stage = nil
                result.message = VerifyCommand.verdict(report)
            } else {
                result.message =
                    (report.problems.first.map { "problem: \($0)" } ?? report.mismatches.first.map { "mismatch: \($0)" })
                    ?? VerifyCommand.verdict(report)
            }
        } catch {
            result.exitCode = VerifyCommand.exitCode(for: error).rawValue
            result.message = error.message
        }
        return result
    }
}
