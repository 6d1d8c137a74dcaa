import Crypto
import FoundationEssentials
import Glibc
import MediaCore
import Packager
import Protection
import SystemSupport
import ThreadSupport

/// `guard-play package INPUT --out DIR`: a thin wrapper over `PackagingJob` that parses options,
/// prints notices and a summary, turns signals into cancellation, and maps errors to exit codes.
enum PackageCommand {
    static let help = """
        usage: guard-play package INPUT --out DIR [options]

        Packages INPUT as encrypted HLS in MPEG-TS: H.264 is copied (Annex-B, AUD, SPS/PPS before IDRs),
        AAC gets ADTS headers, AC-3/E-AC-3 pass through, other audio is transcoded to AAC-LC. DIR is built
        beside itself and renamed into place when complete. INPUT may be a pipe or FIFO, read as a stream
        until its writer closes it.

          --out DIR                 output directory (required; must not exist unless --force)
          --container ts|fmp4       ts (default; HEVC input gets fmp4): MPEG-TS segments; fmp4: CMAF
                                    tracks (init segment + moof/mdat segments), an HLS master and a DASH
                                    manifest.mpd; H.264 or HEVC (hvc1) video
          --encryption MODE         sample-aes (default; CENC cbcs in fmp4), cenc (fmp4 only: AES-CTR),
                                    aes-128 (whole segments) or none
          --license-url URL         Clear Key license URL named in manifest.mpd (fmp4)
          --key HEX                 16-byte content key in hex (default: random from OpenSSL)
          --iv HEX                  16-byte IV in hex, written on every EXT-X-KEY (default: random)
          --key-id HEX              16-byte key ID in hex, substituted for {kid} (default: random)
          --key-file FILE           where to write the key, mode 0600 (default: DIR.key, beside DIR;
                                    never inside DIR)
          --key-uri TEMPLATE        key URI in the playlists; {kid} becomes the key ID (default: the key
                                    file relative to the playlists, or skd://{kid} for FairPlay)
          --key-format FORMAT       identity (default) or fairplay (skd:// URIs, Apple KEYFORMAT)
          --key-period N            a new key, key ID and IV every N segments (1-100000); --key-uri
                                    must hold {kid}, and the key file is a key list, one 'KID KEY'
                                    hex line per period
          --segment-duration SECS   target segment duration, 1-60 (default 6); video is cut at the first
                                    IDR at or after it
          --audio-format FORMAT     ts (default) or packed: ID3-tagged ADTS/AC-3 audio, each audio
                                    stream in a playlist of its own (a rendition beside video)
          --still-duration SECS     seconds of video made from a still image (default 10)
          --flicker[=x,y,w,h]       make the still's video flicker over that region (default: the whole
                                    picture): 60 fps alternating two complementary random pixel masks, a
                                    new pair at every IDR, so one screenshot of a player holds half of it
          --watermark ab            forensic A/B watermark: the H.264 video re-encoded (libx264) as two
                                    variants of every segment, NAME_00000.a.ts (listed) and .b.ts, a
                                    keyed luma pattern added in A and subtracted in B; audio becomes
                                    a rendition; no I-frame playlist; DIR/watermark.json says which
          --watermark-key HEX       16-byte key of the watermark pattern (default: random; it is
                                    written to watermark.json)
          --max-pixels N|WxH        refuse video with larger pictures, exit 16 (default 8192x8192;
                                    each side at most 8192 or the square root of N)
          --force                   replace an existing DIR and key file once the new output is complete;
                                    only a previous output (it holds .guard-play-output) and a plain
                                    16-byte key file or key list, never a symbolic link or a file it
                                    did not write
          --json                    print the result as JSON instead of a summary
          --quiet                   print no notices or progress

        Exit codes: 0 done; 2 usage, or an output or key file that would land on an input; 3 bad option
        value; 10-17 input problems (missing, empty, text, unrecognised, corrupt, no streams, refused codec,
        a still over 4096x4096 or video over --max-pixels, already encrypted); 20 output failed; 21 output
        exists (or --force may not replace it); 130 interrupted. See README.md.
        """

    static let options: [Arguments.Option] = [
        .init("out"), .init("container"), .init("license-url"), .init("encryption"), .init("key"), .init("iv"),
        .init("key-id"), .init("key-file"),
        .init("key-uri"), .init("key-format"), .init("segment-duration"), .init("audio-format"),
        .init("still-duration"), .init("force", .flag), .init("json", .flag), .init("quiet", .flag),
        .init("max-pixels"), .init("key-period"), .init("flicker", .optionalValue), .init("watermark"),
        .init("watermark-key"),
    ]

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        let parsed = try Arguments(arguments, options: options)
        MediaLog.setLevel(.quiet)  // our one-line errors speak instead
        guard parsed.positionals.count == 1 else {
            throw CLIError(
                .usage,
                parsed.positionals.isEmpty ? "package needs an INPUT file\n\(help)" : "package takes one INPUT file")
        }
        guard let out = parsed.value("out"), !out.isEmpty else { throw CLIError(.usage, "package needs --out DIR") }
        var options = try packagingOptions(
            parsed, input: parsed.positionals[0], output: out,
            keyFile: parsed.value("key-file") ?? PackagingOptions.defaultKeyFile(for: out))
        if parsed.has("flicker") {
            let text = parsed.value("flicker") ?? ""
            guard let area = text.isEmpty ? .picture : FlickerArea(parsing: text) else {
                throw CLIError(.badValue, "invalid value '\(text)' for --flicker: expected x,y,w,h in picture pixels")
            }
            options.flicker = area
        }
        let quiet = parsed.has("quiet")
        let json = parsed.has("json")

        let cancellation = PackagingCancellation()
        let frozen = options
        let trap = InterruptTrap(
            onSignal: { cancellation.cancel() }, lastResort: { PackagingJob.removeTemporaryFiles(for: frozen) })
        defer { trap.release() }
        let showProgress = !quiet && !json && isatty(STDERR_FILENO) == 1
        let result: PackagingResult
        do {
            result = try PackagingJob(options: options).run(
                progress: { progress in
                    guard showProgress else { return }
                    let percent = Int(progress.fraction * 100)
                    StandardStream.error.write("\rpackaging: \(percent)%  ")
                },
                notice: { text in
                    if !quiet { StandardStream.error.write("guard-play: notice: \(text)\n") }
                }, cancellation: cancellation)
        } catch {
            if showProgress { StandardStream.error.write("\r") }
            throw CLIError(exitCode(for: error.kind), error.message)
        }
        if showProgress { StandardStream.error.write("\r                 \r") }
        print(json ? jsonSummary(result) : textSummary(result, input: options.input, output: out))
        return .success
    }

    /// The packaging options `parsed` asks for, checked: the part of `package`'s command line that
    /// `catalogue` shares, for one `input` written to `output` with its key in `keyFile`.
    static func packagingOptions(_ parsed: Arguments, input: String, output: String, keyFile: String?)
        throws(CLIError) -> PackagingOptions
    {
        var options = PackagingOptions(input: input, output: output)
        options.key = try parsed.parsed("key", as: "32 hex digits", hex16)
        options.iv = try parsed.parsed("iv", as: "32 hex digits", hex16)
        options.keyID = try parsed.parsed("key-id", as: "32 hex digits", hex16)
        options.keyFile = keyFile
        options.keyURITemplate = parsed.value("key-uri")
        options.keyFormat = try parsed.parsed("key-format", as: "identity or fairplay", KeyFormat.init) ?? .identity
        options.encryption =
            try parsed.parsed("encryption", as: "sample-aes, cenc, aes-128 or none", EncryptionMode.init) ?? .sampleAES
        options.container = try parsed.parsed("container", as: "ts or fmp4", ContainerFormat.init) ?? .transportStream
        options.containerIsDefault = !parsed.has("container")
        options.licenseURL = parsed.value("license-url")
        options.audioFormat =
            try parsed.parsed("audio-format", as: "ts or packed", AudioSegmentFormat.init) ?? .transportStream
        options.segmentDuration = try parsed.parsed("segment-duration", as: "seconds from 1 to 60", seconds) ?? 6
        options.stillDuration = try parsed.parsed("still-duration", as: "seconds from 1 to 3600", seconds) ?? 10
        options.keyPeriod = try parsed.parsed("key-period", as: "a whole number of segments from 1 to 100000") {
            text in
            text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber)
                ? Int(text).flatMap { (1...100_000).contains($0) ? $0 : nil } : nil
        }
        options.watermark = try parsed.parsed("watermark", as: "ab", WatermarkScheme.init)
        options.watermarkKey = try parsed.parsed("watermark-key", as: "32 hex digits", hex16)
        options.force = parsed.has("force")
        options.maxPixels = try maxPixels(parsed)
        if options.encryption == .none { options.keyFile = nil }
        return options
    }

    /// The exit code for each kind of packaging failure.
    static func exitCode(for kind: PackagingError.Kind) -> ExitCode {
        switch kind {
        case .inputMissing: .inputMissing
        case .inputEmpty: .inputEmpty
        case .inputNotMedia: .inputNotMedia
        case .inputUnrecognised: .inputUnrecognised
        case .inputCorrupt: .inputTruncated
        case .inputNoStreams: .inputNoStreams
        case .unsupportedCodec, .containerUnsupported: .inputUnsupported
        case .encryptedInput: .inputEncrypted
        case .outputExists: .outputExists
        case .pathConflict: .usage
        case .outputFailed: .outputFailed
        case .invalidOptions: .badValue
        case .cancelled: .interrupted
        }
    }

    /// `--max-pixels` of `package` and `verify`, or the default 8192×8192.
    static func maxPixels(_ parsed: Arguments) throws(CLIError) -> Int {
        try parsed.parsed("max-pixels", as: "a pixel count or WxH, at most 2147483647 pixels") {
            PictureSizeLimit(parsing: $0)?.maxPixels
        } ?? PictureSizeLimit.standard.maxPixels
    }

    private static func hex16(_ text: String) -> [UInt8]? {
        guard let bytes = [UInt8](hex: text), bytes.count == 16 else { return nil }
        return bytes
    }

    private static func seconds(_ text: String) -> Double? {
        guard let value = Double(text), value.isFinite, value > 0 else { return nil }
        return value
    }

    private static func textSummary(_ result: PackagingResult, input: String, output: String) -> String {
        let method =
            switch result.encryption {
            // In fMP4, `sample-aes` is CENC's cbcs scheme (Apple's SAMPLE-AES for CMAF).
            case .sampleAES: result.container == .fragmentedMP4 ? "CENC cbcs" : "SAMPLE-AES"
            case .cenc: "CENC cenc"
            case .aes128: "AES-128"
            case .none: "no encryption"
            }
        var lines = [
            "packaged \(input) → \(output) (\(method), \(counted(result.streams.count, "stream")), "
                + "\(counted(result.segmentCount, "segment")), \(String(cFormat: "%.2f", result.duration)) s)",
            "  master     \(result.masterPlaylist)",
        ]
        if let keyFile = result.keyFile { lines.append("  key file   \(keyFile) (mode 0600)") }
        if result.encryption != .none {
            lines.append("  key ID     \(result.keyID.hexString)")
            if let uri = result.keyURI { lines.append("  key URI    \(uri)") }
            if let iv = result.iv { lines.append("  IV         0x\(iv.hexString.uppercased())") }
            if let period = result.keyPeriod {
                lines.append("  key period \(counted(period, "segment")), \(counted(result.periodKeys.count, "key"))")
            }
        }
        for stream in result.streams {
            let origin = stream.transcodedFrom.map { " (transcoded from \($0))" } ?? ""
            let language = stream.language.map { " [\($0)]" } ?? ""
            lines.append(
                "  \(stream.kind)  \(stream.codec)\(language)  \(stream.accessUnits) access units  "
                    + "\(stream.playlist)\(origin)")
        }
        return lines.joined(separator: "\n")
    }

    private static func jsonSummary(_ result: PackagingResult) -> String {
        var object: [String: Any] = [
            "output": result.outputDirectory, "master": result.masterPlaylist, "playlists": result.mediaPlaylists,
            "encryption": result.encryption.rawValue, "keyId": result.keyID.hexString,
            "segments": result.segmentCount, "duration": result.duration, "bytes": result.bytesWritten,
            "notices": result.notices,
            "streams": result.streams.map { stream -> [String: Any] in
                var entry: [String: Any] = [
                    "kind": stream.kind, "codec": stream.codec, "sourceIndex": stream.sourceIndex,
                    "playlist": stream.playlist, "accessUnits": stream.accessUnits,
                ]
                if let from = stream.transcodedFrom { entry["transcodedFrom"] = from }
                if let language = stream.language { entry["language"] = language }
                return entry
            },
        ]
        if let keyFile = result.keyFile { object["keyFile"] = keyFile }
        if let uri = result.keyURI { object["keyUri"] = uri }
        if let iv = result.iv { object["iv"] = iv.hexString }
        if let period = result.keyPeriod {
            object["keyPeriod"] = period
            object["keyIds"] = result.periodKeys.map(\.keyID.hexString)
        }
        let text = JSON(any: object)?.text(sortingKeys: true, pretty: true) ?? ""
        return text
    }
}
