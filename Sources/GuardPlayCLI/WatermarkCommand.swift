import ControlAPI
import FoundationEssentials
import Gateway
import Glibc
import MediaCore
import Packager
import Store
import SystemSupport
import ThreadSupport

/// `guard-play watermark detect SUSPECT --asset ID`: names the session a leaked copy of a `--watermark ab`
/// asset was served to, from the gateway's store and watermarking key.
enum WatermarkCommand {
    static let help = """
        usage: guard-play watermark detect SUSPECT --asset ID [--data DIR | --config FILE] [--json]

        Reads a copy of a watermarked asset (re-encoded, scaled, cropped, a screen recording of a player
        window, starting anywhere) and names the session of the asset it was served to: it aligns the copy
        with the asset in time and space, reads variant A or B of each segment it shows with a soft score,
        and correlates the scores with the codeword of every session of the asset in the gateway's store.

          --asset ID                 the asset the copy shows
          --data DIR                 the gateway's data directory (default ./guard-data)
          --store URL                the gateway's PostgreSQL store, as for serve
          --kek-file FILE            its key-encryption key (default as for serve)
          --watermark-key-file FILE  its watermarking key (default as for serve; GUARDPLAY_WATERMARK_KEY too)
          --config FILE              the gateway's configuration file, for the options above
          --threads N                segments decoded at once (default: one per core)
          --json                     print one JSON object: session (null when none), segments,
                                     bitErrorRate, falseMatchProbability and more
        Every other `serve` option is accepted too, and ignored.

        Exit codes: 0 a session matched; 50 no session matched; 51 too little of the asset to decide;
        52 the suspect is a still image; 53 it is audio only; 54 the asset has no watermark; 55 no such
        asset; 10-16 the suspect or the store cannot be read.
        """

    static let options =
        ServeConfiguration.options + [
            Arguments.Option("asset"), Arguments.Option("json", .flag), Arguments.Option("threads"),
        ]

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        let parsed = try Arguments(arguments, options: options)
        guard parsed.positionals.first == "detect" else {
            throw CLIError(.usage, "watermark needs an action: detect\n\(help)")
        }
        guard parsed.positionals.count == 2 else {
            throw CLIError(.usage, "watermark detect takes one SUSPECT file\n\(help)")
        }
        guard let assetID = parsed.value("asset") else { throw CLIError(.usage, "watermark detect needs --asset ID") }
        let threads =
            try parsed.parsed("threads", as: "a thread count from 1 to 64") {
                Int($0).flatMap { (1...64).contains($0) ? $0 : nil }
            }
            ?? ProcessInfo.processInfo.activeProcessorCount
        let suspect = parsed.positionals[1]
        let configuration = try ServeConfiguration.load(parsed)
        MediaLog.setLevel(.quiet)

        switch try packaging({ () throws(PackagingError) in try WatermarkDetector.inspect(suspect) }) {
        case .video: break
        case .stillImage:
            throw CLIError(.watermarkStillImage, "\(suspect) is a still image: a watermark is read from video")
        case .audioOnly:
            throw CLIError(.watermarkAudioOnly, "\(suspect) has no video: the watermark is in the picture")
        }
        let store = try openStore(configuration)
        let record: AssetRecord?
        let keys: [ContentKeyRecord]
        let candidates: [String]
        do {
            record = try store.asset(assetID)
            keys = try store.keys().filter { $0.assetID == assetID }
            candidates = try store.sessionIDs(asset: assetID)
        } catch { throw CLIError(.failure, "\(error)") }
        guard let record else {
            throw CLIError(.watermarkAssetUnknown, "no asset '\(assetID)' in the store at \(store.location)")
        }
        let rewriter = PlaylistRewriter(
            keyPathPrefix: "",
            kidsByURI: Dictionary(keys.compactMap { key in key.uri.map { ($0, key.kid) } }) { a, _ in a },
            kids: keys.map(\.kid).sorted())
        let byKID = Dictionary(keys.map { ($0.kid, $0.key) }) { a, _ in a }
        let loaded = try packaging { () throws(PackagingError) in
            try WatermarkDetectionAsset.load(directory: record.directory) { uri in
                rewriter.kid(forURI: uri).flatMap { byKID[$0] }
            }
        }
        guard let asset = loaded else {
            throw CLIError(
                .watermarkAssetUnmarked,
                "asset '\(assetID)' has no A/B watermark (no watermark.json in \(record.directory))")
        }
        let watermark = try sessionWatermark(configuration)

        let scratch = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // The scratch directory holds decrypted copies of the asset: an interrupted detection removes it
        // too. The detector cannot be cancelled, so the process ends there (status 130); a worker may
        // still be writing a file into the directory as it goes, hence more than one try.
        let trap = InterruptTrap(
            onSignal: {
                for _ in 0..<5 {
                    if (try? FileManager.default.removeItem(atPath: scratch)) != nil { break }
                }
                _exit(130)
            }, lastResort: {})
        defer { trap.release() }
        let started = Date()
        let detection = try packaging { () throws(PackagingError) in
            try WatermarkDetector(asset: asset, threads: threads).detect(suspect, scratch: scratch)
        }
        let found = WatermarkDecoder(watermark: watermark).identify(
            scores: detection.scores, asset: assetID, candidates: candidates)
        // A copy that does not align with the asset shows none of it: no match, however short.
        let outcome: ExitCode =
            found.session != nil
            ? .success
            : found.enoughMaterial || detection.mapping == nil ? .watermarkNoMatch : .watermarkNotEnoughMaterial
        let report = Report(
            detection: detection, found: found, outcome: outcome, seconds: Date().timeIntervalSince(started),
            segmentSeconds: asset.segments.first?.duration ?? 0)
        print(parsed.has("json") ? report.json : report.text)
        return outcome
    }

    /// What one detection printed.
    struct Report {
        let detection: WatermarkDetection
        let found: WatermarkIdentification
        let outcome: ExitCode
        let seconds: Double
        let segmentSeconds: Double

        var outcomeName: String {
            switch outcome {
            case .success: "match"
            case .watermarkNoMatch: "no-match"
            default: "not-enough-material"
            }
        }

        var text: String {
            let read =
                "\(found.segments) segments read (\(found.bitsRead) codeword bits, \(detection.matchedPictures) of "
                + "\(detection.pictures) pictures matched)"
            let numbers =
                "bit error rate \(format(found.bitErrorRate)), false-match probability "
                + "\(format(found.falseMatchProbability)) among \(found.candidates) sessions"
            switch outcome {
            case .success:
                return "session \(found.session!): \(read), \(numbers)"
            case .watermarkNoMatch where detection.mapping == nil:
                return "no match: the copy does not align with the asset (\(detection.pictures) pictures read)"
            case .watermarkNoMatch:
                return
                    "no match: no session of the asset fits; \(read); best candidate \(found.bestCandidate ?? "none"): "
                    + numbers
            default:
                let needed = Double(WatermarkDecoder.minimumBits) * segmentSeconds
                return "not enough material: \(read); at least \(WatermarkDecoder.minimumBits) codeword bits "
                    + "(about \(Int(needed.rounded())) s of the asset) are needed to decide"
            }
        }

        var json: String {
            var object: [String: Any] = [
                "session": found.session ?? JSON.null, "segments": found.segments,
                "bitErrorRate": found.bitErrorRate, "falseMatchProbability": found.falseMatchProbability,
                "outcome": outcomeName, "bitsRead": found.bitsRead, "enoughMaterial": found.enoughMaterial,
                "candidates": found.candidates, "bestCandidate": found.bestCandidate ?? JSON.null,
                "runnerUp": found.runnerUp ?? JSON.null, "runnerUpBitErrorRate": found.runnerUpBitErrorRate,
                "runnerUpFalseMatchProbability": found.runnerUpFalseMatchProbability,
                "closeCandidates": found.closeCandidates, "pictures": detection.pictures,
                "matchedPictures": detection.matchedPictures, "copySeconds": detection.seconds,
                "startsAt": detection.startsAt ?? JSON.null, "elapsedSeconds": seconds,
                "scores": Dictionary(uniqueKeysWithValues: detection.scores.map { ("\($0.key)", $0.value) }),
            ]
            if let mapping = detection.mapping {
                object["mapping"] = [
                    "scaleX": mapping.scaleX, "scaleY": mapping.scaleY, "offsetX": mapping.offsetX,
                    "offsetY": mapping.offsetY,
                ]
            }
            return JSON(any: object)?.text(sortingKeys: true, pretty: false) ?? "{}"
        }

        private func format(_ value: Double) -> String {
            value == 0 || value >= 0.001 ? String(cFormat: "%.3f", value) : String(cFormat: "%.1e", value)
        }
    }

    /// Runs a packager call, its failure turned into the packager's exit code.
    private static func packaging<T>(_ body: () throws(PackagingError) -> T) throws(CLIError) -> T {
        do { return try body() } catch { throw CLIError(PackageCommand.exitCode(for: error.kind), error.message) }
    }

    /// The gateway's store, opened only when it exists: detection never creates a database or a KEK.
    private static func openStore(_ configuration: ServeConfiguration) throws(CLIError) -> any Store {
        if case .sqlite(let directory) = configuration.storeLocation,
            !FileManager.default.fileExists(atPath: directory + "/guardplay.db")
        {
            throw CLIError(.inputMissing, "no gateway store in \(directory) (guardplay.db): give the gateway's --data")
        }
        let (environment, file, _) = ServeCommand.kekSource(configuration)
        if environment == nil, !FileManager.default.fileExists(atPath: file) {
            throw CLIError(
                .inputMissing, "no key-encryption key at \(file): give the gateway's --kek-file or GUARDPLAY_KEK")
        }
        return try ServeCommand.openStore(configuration).0
    }

    /// The sessions' watermark under the gateway's watermarking key, which must exist already.
    private static func sessionWatermark(_ configuration: ServeConfiguration) throws(CLIError) -> SessionWatermark {
        let source = ServeCommand.watermarkKeySource(configuration)
        if source.environment == nil, !FileManager.default.fileExists(atPath: source.file) {
            throw CLIError(
                .inputMissing,
                "no watermarking key at \(source.file): give the gateway's --watermark-key-file or "
                    + "GUARDPLAY_WATERMARK_KEY")
        }
        guard let key = try ServeCommand.secret(source, check: false).key else {
            throw CLIError(.failure, "the watermarking key could not be read")
        }
        return SessionWatermark(key: key.derivedKey(for: "guardplay/watermark/v1"))
    }

    /// A private directory for decrypted variants.
    private static func scratchDirectory() throws(CLIError) -> String {
        var template = Array((FileManager.default.temporaryDirectory.path + "/guard-play-watermark-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CLIError(.outputFailed, "cannot make a temporary directory: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }
}
