import FoundationEssentials
import MediaCore
import Packager
import SystemSupport

/// `guard-play verify DIR`: runs our own SAMPLE-AES decryptor and rule checker over a packaged output,
/// prints a per-stream report, and exits non-zero on any problem or mismatch.
enum VerifyCommand {
    static let help = """
        usage: guard-play verify DIR [--source FILE] [--key-file FILE | --key HEX] [--max-pixels N] [--json]

        Checks a packaged output: playlist tags, versions, EXTINF against TARGETDURATION, key lines with
        explicit IVs, PAT/PMT signalling, continuity counters, I-frame byte ranges and bandwidths; decrypts
        every protected NAL unit and audio frame. With --source, compares every access unit, bytes and
        timestamps, with the source after the same conversion (transcoded audio and stills are compared
        with a deterministic re-encode, which checks the packaging, not the encoder).

          --source FILE     the media file the output was packaged from
          --key-file FILE   the key: 16 raw bytes or 32 hex digits (default: the key URI when it names a
                            local file), or the key list of a --key-period output ('KID KEY' lines):
                            each key period then decrypts with its own key, and the periods are checked
          --key HEX         the key as 32 hex digits
          --max-pixels N    refuse a source with larger pictures (default 8192x8192), exit 16
          --json            print the report as JSON

        Exit codes: 0 verified; 2 usage or no key; 10 no output directory; 30 content differs from the
        source; 31 the output breaks a rule or cannot be read; 10-17 the source cannot be read.
        """

    static let options: [Arguments.Option] = [
        .init("source"), .init("key-file"), .init("key"), .init("json", .flag), .init("max-pixels"),
    ]

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        let parsed = try Arguments(arguments, options: options)
        MediaLog.setLevel(.quiet)  // our one-line errors speak instead
        guard parsed.positionals.count == 1 else {
            throw CLIError(.usage, parsed.positionals.isEmpty ? "verify needs a DIR\n\(help)" : "verify takes one DIR")
        }
        if parsed.has("key") && parsed.has("key-file") { throw CLIError(.usage, "give --key or --key-file, not both") }
        var key: [UInt8]? = try parsed.parsed("key", as: "32 hex digits") { text in
            [UInt8](hex: text).flatMap { $0.count == 16 ? $0 : nil }
        }
        var keyList: [PeriodKeyPair] = []
        if let path = parsed.value("key-file") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError(.inputMissing, "cannot read key file \(path)")
            }
            if let list = KeyListFormat.parse([UInt8](data)) {
                keyList = list.map { PeriodKeyPair(keyID: $0.keyID, key: $0.key) }
            } else if let parsedKey = KeyFileFormat.parse([UInt8](data)) {
                key = parsedKey
            } else {
                throw CLIError(
                    .badValue, "key file \(path) holds neither 16 raw bytes, 32 hex digits nor a 'KID KEY' key list")
            }
        }
        let maxPixels = try PackageCommand.maxPixels(parsed)
        let report: VerificationReport
        do {
            var verifier = Verifier(
                directory: parsed.positionals[0], key: key, source: parsed.value("source"), maxPixels: maxPixels)
            verifier.keyList = keyList
            report = try verifier.run()
        } catch {
            throw CLIError(exitCode(for: error), error.message)
        }
        print(parsed.has("json") ? json(report) : text(report, directory: parsed.positionals[0]))
        return exitCode(for: report)
    }

    /// The exit code for a verifier that could not run.
    static func exitCode(for error: VerificationError) -> ExitCode {
        switch error.kind {
        case .outputMissing: .inputMissing
        case .keyMissing: .usage
        case .source: PackageCommand.exitCode(for: error.sourceKind ?? .inputCorrupt)
        }
    }

    /// The exit code for a report: a mismatch first, then a broken rule.
    static func exitCode(for report: VerificationReport) -> ExitCode {
        if report.mismatchCount > 0 { return .verifyMismatch }
        if !report.problems.isEmpty { return .verifyInvalid }
        return .success
    }

    /// The report's last line: what passed, or how much failed.
    static func verdict(_ report: VerificationReport) -> String {
        guard report.passed else {
            return "FAILED: \(report.problems.count) problems, \(report.mismatchCount) mismatches"
        }
        let compared = report.streams.contains { $0.framesEqual != nil }
        return compared ? "OK: every access unit equals the source" : "OK: the output keeps the rules and decrypts"
    }

    private static func text(_ report: VerificationReport, directory: String) -> String {
        var lines = [
            "verify \(directory): \(report.method), \(counted(report.playlists.count, "playlist")), "
                + counted(report.segments, "segment")
        ]
        for note in report.notes { lines.append("  note: \(note)") }
        for stream in report.streams {
            let pid = stream.pid.map { "PID 0x\(String($0, radix: 16))" } ?? (stream.isFragmented ? "CMAF" : "packed")
            var line =
                "  \(stream.playlist)  \(pid)  \(stream.kind) \(stream.codec)  frames \(stream.frames)  "
                + "decrypted \(stream.decryptedUnits)"
            if let equal = stream.framesEqual {
                line += "  equal \(equal)/\(stream.frames) (source \(stream.sourceFrames ?? 0))"
            }
            lines.append(line)
            if let comparison = stream.comparison { lines.append("      compared \(comparison)") }
        }
        if report.iFramesChecked > 0 {
            lines.append(
                "  I-frames  \(report.iFramesEqual)/\(report.iFramesChecked) ranges hold the media playlist's IDR picture"
            )
        }
        for problem in report.problems { lines.append("  problem: \(problem)") }
        for mismatch in report.mismatches { lines.append("  mismatch: \(mismatch)") }
        if report.mismatchCount > report.mismatches.count {
            lines.append("  … \(report.mismatchCount - report.mismatches.count) more mismatches")
        }
        lines.append(verdict(report))
        return lines.joined(separator: "\n")
    }

    private static func json(_ report: VerificationReport) -> String {
        let object: [String: Any] = [
            "method": report.method, "playlists": report.playlists, "segments": report.segments,
            "passed": report.passed, "problems": report.problems, "mismatches": report.mismatches,
            "mismatchCount": report.mismatchCount, "notes": report.notes,
            "iFrames": ["checked": report.iFramesChecked, "equal": report.iFramesEqual],
            "streams": report.streams.map { stream -> [String: Any] in
                var entry: [String: Any] = [
                    "playlist": stream.playlist, "kind": stream.kind, "codec": stream.codec, "frames": stream.frames,
                    "decrypted": stream.decryptedUnits,
                ]
                if let pid = stream.pid { entry["pid"] = pid }
                if let equal = stream.framesEqual { entry["framesEqual"] = equal }
                if let source = stream.sourceFrames { entry["sourceFrames"] = source }
                if let comparison = stream.comparison { entry["comparison"] = comparison }
                return entry
            },
        ]
        let text = JSON(any: object)?.text(sortingKeys: true, pretty: true) ?? ""
        return text
    }
}
