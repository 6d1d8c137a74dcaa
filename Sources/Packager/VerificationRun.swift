import Crypto
import FoundationEssentials
import Glibc
import MediaFormats
import SystemSupport

/// The state of one verification: the playlists read, per-stream tallies, the IDR pictures the I-frame
/// playlist must point at, and the report being filled.
struct VerificationRun {
    /// The largest playlist and segment the verifier reads, so hostile files cannot exhaust memory.
    static let playlistLimit = 4 << 20
    static let segmentLimit = ParsedMediaPlaylist.byteRangeLimit
    /// The most bytes one verification reads from the output, playlists, segments and I-frame ranges
    /// together (64 GiB: about twice a three-hour programme at 20 Mbit/s, since the I-frame playlist
    /// reads the video again), so a hostile playlist cannot keep it reading for hours.
    static let readLimit = 64 << 30
    /// The most media playlists a master playlist may name (GuardPlay writes one per audio stream, the
    /// video and the I-frames).
    static let playlistCountLimit = 1_000
    /// The most entries (segments and I-frame ranges) all media playlists together may list: a day of
    /// one-second segments in two playlists.
    static let entryLimit = 200_000
    /// Mismatch lines kept in the report (all are counted).
    static let mismatchLines = 20

    let directory: String
    var key: [UInt8]?
    let source: String?
    /// The picture-size limit the source is opened with.
    let maxPixels: Int
    /// The first error reading the source gave partway (a truncated or corrupt source): `verify` then
    /// fails with the source's input error, as `package` of that source would.
    var sourceFailure: PackagingError?
    var report = VerificationReport(method: "NONE", playlists: [], segments: 0, streams: [])
    /// What is left of `readLimit`.
    let budget = ReadBudget(bytes: VerificationRun.readLimit)
    var method = "NONE"
    var cipher: SampleAESCipher?
    /// The key list of a `--key-period` output, when one was given: each segment is then decrypted
    /// with the key its key line names.
    var periods: KeyPeriodCheck?
    /// Digests of IDR pictures by segment URI and PTS, for the I-frame playlist.
    var idrPictures: [String: [Int64: [UInt8]]] = [:]
    /// Codec strings found per media playlist.
    var foundCodecs: [String: [String]] = [:]

    init(directory: String, key: [UInt8]?, source: String?, maxPixels: Int) {
        self.directory = directory
        self.key = key
        self.source = source
        self.maxPixels = maxPixels
    }

    // MARK: Reporting

    mutating func problem(_ text: String) { report.problems.append(text) }

    mutating func mismatch(_ text: String) {
        report.mismatchCount += 1
        if report.mismatches.count < VerificationRun.mismatchLines { report.mismatches.append(text) }
    }

    // MARK: Files

    /// True for a URI that names a file directly inside the output directory.
    static func isPlainFileName(_ uri: String) -> Bool {
        !uri.isEmpty && uri != "." && uri != ".." && !uri.contains("/") && !uri.contains(":") && !uri.contains("\0")
            && !uri.contains("\\") && !uri.contains("?") && !uri.contains("#")
    }

    // MARK: The run

    mutating func execute() throws(VerificationError) -> VerificationReport {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory else {
            throw VerificationError(
                kind: .outputMissing, sourceKind: nil, message: "no output directory at \(directory)")
        }
        guard
            let masterBytes = VerificationRun.readFile(directory + "/master.m3u8", limit: VerificationRun.playlistLimit)
        else {
            throw VerificationError(
                kind: .outputMissing, sourceKind: nil, message: "\(directory) holds no readable master.m3u8")
        }
        let master: ParsedMasterPlaylist
        do {
            master = try ParsedMasterPlaylist(String(decoding: masterBytes, as: UTF8.self), name: "master.m3u8")
        } catch {
            problem("\(error)")
            return report
        }

        // The media playlists the master names, each once, in order.
        var mediaNames: [String] = []
        var namedOnce = Set<String>()
        for uri in master.variants.map(\.uri) + master.media.compactMap({ $0["URI"] })
        where namedOnce.insert(uri).inserted {
            mediaNames.append(uri)
        }
        let iFrameNames = master.iFrameVariants.compactMap { $0["URI"] }
        let iFrameSet = Set(iFrameNames)
        guard mediaNames.count + iFrameNames.count <= VerificationRun.playlistCountLimit else {
            problem(
                "master.m3u8 names \(mediaNames.count + iFrameNames.count) media playlists, more than the "
                    + "\(VerificationRun.playlistCountLimit) the verifier reads")
            return report
        }
        var playlists: [String: ParsedMediaPlaylist] = [:]
        for name in mediaNames + iFrameNames {
            guard VerificationRun.isPlainFileName(name) else {
                problem("master.m3u8 names '\(name)', which is not a file inside the output directory")
                continue
            }
            let bytes: [UInt8]
            switch budget.read(directory + "/" + name, limit: VerificationRun.playlistLimit) {
            case .bytes(let read): bytes = read
            case .unreadable:
                problem("master.m3u8 names \(name), which is missing, unreadable or over 4 MiB")
                continue
            case .overBudget:
                problem(budget.exhaustedProblem)
                return report
            }
            do {
                playlists[name] = try ParsedMediaPlaylist(String(decoding: bytes, as: UTF8.self), name: name)
                report.playlists.append(name)
            } catch {
                problem("\(error)")
            }
        }
        guard !playlists.isEmpty else {
            problem("master.m3u8 names no readable media playlist")
            return report
        }
        let entries = playlists.values.reduce(0) { $0 + $1.segments.count }
        guard entries <= VerificationRun.entryLimit else {
            problem(
                "the media playlists list \(entries) segments and ranges, more than the \(VerificationRun.entryLimit) "
                    + "the verifier checks")
            return report
        }
        checkPlaylists(playlists, iFrameNames: iFrameSet)
        try resolveKey(playlists)
        checkNoKeyPublished()
        if let periods, method != "NONE" {
            report.problems += periods.problems(
                mediaNames.filter { !iFrameSet.contains($0) }.compactMap { name in
                    playlists[name].map { (name, $0.segments) }
                }, notes: &report.notes)
        }

        // The source, read through the same plan and conversion as the packager.
        var layout: OutputLayout? = nil
        var stillParameters = (frames: 1, gop: 1)
        if let video = playlists["video.m3u8"] {
            // Frames of a video made from a still, as the durations say; never more than the packager
            // makes (a hostile playlist must not set the verifier encoding for days).
            func frames(_ seconds: Double) -> Int {
                min(
                    StillImageProducer.maximumFrames,
                    max(1, clampedInt((seconds * Double(StillImageProducer.frameRate)).rounded())))
            }
            stillParameters.frames = frames(video.segments.reduce(0.0) { $0 + $1.duration })
            let iFrames = iFrameNames.first.flatMap { playlists[$0] }?.segments ?? []
            stillParameters.gop = iFrames.count >= 2 ? frames(iFrames[0].duration) : stillParameters.frames
        }
        // A --watermark output: its pattern, to encode the variants again from the source.
        let marked = watermark()
        var plan: StreamPlan? = nil
        if let source {
            do {
                let reader = try SourceReader(
                    path: source, stillFrames: stillParameters.frames, stillGOP: stillParameters.gop,
                    maxPixels: maxPixels, watermark: marked?.source)
                plan = reader.plan
                layout = OutputLayout(
                    hasVideo: reader.plan.video != nil, audioCount: reader.plan.audio.count,
                    separateAudio: mediaNames.contains("audio-1.m3u8"))
                report.notes += reader.plan.notices
            } catch {
                throw VerificationError(
                    kind: .source, sourceKind: error.kind, message: "cannot read the source: \(error.message)")
            }
            let expected = Set(layout!.playlists.map { $0.name + ".m3u8" })
            let found = Set(mediaNames)
            if expected != found {
                mismatch(
                    "the source makes playlists \(expected.sorted().joined(separator: ", ")) but master.m3u8 names "
                        + found.sorted().joined(separator: ", "))
            }
        }

        for name in mediaNames where !iFrameSet.contains(name) {
            guard let playlist = playlists[name] else { continue }
            let slots = layout?.playlists.first { $0.name + ".m3u8" == name }?.slots
            // A playlist with variants is checked twice: as listed (A), then with every segment's B file.
            let variants: [WatermarkVariant?] =
                marked?.manifest.playlists.contains(name) == true ? [.a, .b] : [nil]
            for variant in variants {
                var expected: ExpectedAccessUnits? = nil
                if let source, let plan, let slots {
                    do {
                        let reader = try SourceReader(
                            path: source, stillFrames: stillParameters.frames, stillGOP: stillParameters.gop,
                            maxPixels: maxPixels, watermark: marked?.source)
                        expected = ExpectedAccessUnits(reader: reader, slots: slots, plan: plan, variant: variant)
                    } catch {
                        throw VerificationError(
                            kind: .source, sourceKind: error.kind, message: "cannot read the source: \(error.message)")
                    }
                }
                guard variant == .b else {
                    verifyMediaPlaylist(name: name, playlist, expected: expected, slots: slots)
                    continue
                }
                var problems: [String] = []
                let other = WatermarkManifest.variantB(of: playlist, name: name) { problems.append($0) }
                for text in problems { problem(text) }
                verifyMediaPlaylist(name: name + " (variant B)", other, expected: expected, slots: slots)
            }
        }
        if let failure = sourceFailure {
            throw VerificationError(
                kind: .source, sourceKind: failure.kind, message: "cannot read the source: \(failure.message)")
        }
        for name in iFrameNames {
            if let playlist = playlists[name] { verifyIFrames(name: name, playlist) }
        }
        checkMaster(master, playlists: playlists)
        report.method = method
        return report
    }

    /// The output's `watermark.json` and the pattern it names, or nil when it has none; a manifest that
    /// does not parse is a problem.
    private mutating func watermark() -> (
        manifest: WatermarkManifest, source: (pattern: WatermarkPattern, segmentDuration: Double)
    )? {
        do throws(PackagingError) {
            guard let manifest = try WatermarkManifest.load(from: directory) else { return nil }
            report.notes.append(manifest.verificationNote)
            return (manifest, try manifest.source)
        } catch {
            problem(error.message)
            return nil
        }
    }

    // MARK: Playlist rules

    private mutating func checkPlaylists(_ playlists: [String: ParsedMediaPlaylist], iFrameNames: Set<String>) {
        var methods = Set<String>()
        var targets = Set<Int>()
        for (name, playlist) in playlists.sorted(by: { $0.key < $1.key }) {
            var needed = 1
            for key in playlist.keyLines {
                let keyMethod = key["METHOD"] ?? ""
                methods.insert(keyMethod)
                if keyMethod == "NONE" { continue }
                guard keyMethod == "SAMPLE-AES" || keyMethod == "AES-128" else {
                    problem("\(name): EXT-X-KEY METHOD '\(keyMethod)' is not SAMPLE-AES or AES-128")
                    continue
                }
                if key["URI"] == nil { problem("\(name): an EXT-X-KEY has no URI") }
                if let iv = key["IV"] {
                    if !(iv.hasPrefix("0x") || iv.hasPrefix("0X")) || [UInt8](hex: iv)?.count != 16 {
                        problem("\(name): IV '\(iv)' is not 0x followed by 32 hex digits")
                    }
                    needed = max(needed, 2)
                } else {
                    problem("\(name): an EXT-X-KEY has no explicit IV")
                }
                if keyMethod == "SAMPLE-AES" || key["KEYFORMAT"] != nil || key["KEYFORMATVERSIONS"] != nil {
                    needed = max(needed, 5)
                }
                if let format = key["KEYFORMAT"] {
                    if format == "com.apple.streamingkeydelivery" {
                        if !(key["URI"] ?? "").hasPrefix("skd://") {
                            problem("\(name): a FairPlay key URI must be skd://")
                        }
                    } else if format != "identity" {
                        problem("\(name): unknown KEYFORMAT '\(format)'")
                    }
                }
            }
            if playlist.hasDecimalDurations { needed = max(needed, 3) }
            if playlist.iFramesOnly || playlist.segments.contains(where: { $0.byteRange != nil }) {
                needed = max(needed, 4)
            }
            switch playlist.version {
            case nil: problem("\(name): no EXT-X-VERSION, though its features need version \(needed)")
            case let version? where version < needed:
                problem("\(name): EXT-X-VERSION \(version) is below the \(needed) its features need")
            case let version? where version > needed:
                problem("\(name): EXT-X-VERSION \(version) is not the minimum its features need (\(needed))")
            default: break
            }
            if let target = playlist.targetDuration {
                targets.insert(target)
                for segment in playlist.segments where roundedDuration(segment.duration) > target {
                    problem(
                        "\(name) line \(segment.line): EXTINF \(segment.duration) rounds above TARGETDURATION \(target)"
                    )
                }
            } else {
                problem("\(name): no EXT-X-TARGETDURATION")
            }
            if !playlist.independentSegments { problem("\(name): no EXT-X-INDEPENDENT-SEGMENTS") }
            if !playlist.endList { problem("\(name): no EXT-X-ENDLIST") }
            if playlist.segments.isEmpty { problem("\(name): no segments") }
            if iFrameNames.contains(name) != playlist.iFramesOnly {
                problem(
                    "\(name): EXT-X-I-FRAMES-ONLY \(playlist.iFramesOnly ? "in a media" : "missing from an I-frame") playlist"
                )
            }
            for tag in playlist.unknownTags { problem("unexpected tag at \(tag)") }
            if !playlist.mapLines.isEmpty { problem("\(name): EXT-X-MAP, which MPEG-TS output never has") }
            if let first = playlist.segments.first, first.key == nil, !playlist.keyLines.isEmpty {
                problem("\(name): the first segment comes before its EXT-X-KEY")
            }
        }
        methods.remove("NONE")
        if methods.count > 1 {
            problem("the playlists mix encryption methods: \(methods.sorted().joined(separator: ", "))")
        }
        method = methods.first ?? "NONE"
        if targets.count > 1 { problem("the playlists disagree on EXT-X-TARGETDURATION: \(targets.sorted())") }
        let encrypted = playlists.values.filter { !$0.keyLines.isEmpty }.count
        if method != "NONE" && encrypted != playlists.count {
            problem("\(playlists.count - encrypted) playlists carry no EXT-X-KEY while the others are encrypted")
        }
    }

    // MARK: Keys

    private mutating func resolveKey(_ playlists: [String: ParsedMediaPlaylist]) throws(VerificationError) {
        guard method != "NONE" else { return }
        if let periods {
            // Each key line names its period's key; `key` is the first period's, for the checks below.
            key = periods.keys[0].key
            return
        }
        if key == nil {
            let uri = playlists.values.flatMap(\.keyLines).compactMap { $0["URI"] }.first ?? ""
            if !uri.isEmpty && !uri.contains(":") {
                let path = uri.hasPrefix("/") ? uri : directory + "/" + uri
                if let data = FileManager.default.contents(atPath: path) {
                    key = KeyFileFormat.parse([UInt8](data))
                    if key != nil { report.notes.append("key read from the key URI \(uri)") }
                }
            }
        }
        guard let key else {
            throw VerificationError(
                kind: .keyMissing, sourceKind: nil,
                message: "the output is \(method) encrypted: give its key (--key-file or --key) to decrypt it")
        }
        if method == "SAMPLE-AES" {
            guard
                let iv = playlists.values.flatMap(\.keyLines).compactMap({ $0["IV"] }).first.flatMap({
                    [UInt8](hex: $0)
                }),
                iv.count == 16
            else { return }
            cipher = try? SampleAESCipher(key: key, iv: iv, encrypt: false)
            let ivs = Set(playlists.values.flatMap(\.keyLines).compactMap { $0["IV"]?.uppercased() })
            if ivs.count > 1 { problem("SAMPLE-AES key lines carry different IVs: \(ivs.sorted())") }
        }
    }

    /// The published directory must hold no key: no file with the key's bytes or hex, and no `.key` file.
    private mutating func checkNoKeyPublished() {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for entry in entries.sorted() {
            if entry.hasSuffix(".key") { problem("the output directory holds a key file, \(entry)") }
            guard let key else { continue }
            var status = stat()
            guard stat(directory + "/" + entry, &status) == 0, status.st_size <= 256, status.st_size >= 16 else {
                continue
            }
            if let data = FileManager.default.contents(atPath: directory + "/" + entry),
                KeyFileFormat.parse([UInt8](data)) == key
            {
                problem("the output directory publishes the content key in \(entry)")
            }
        }
    }
}

/// What reading one file of the output gave.
enum OutputRead {
    /// The file's bytes.
    case bytes([UInt8])
    /// Missing, not a regular file, over its size limit, or unreadable.
    case unreadable
    /// Reading it would pass the verification's `readLimit`.
    case overBudget
}

/// How many bytes a verification may still read from the output; every read of a playlist, segment
/// or I-frame range's file is charged its size.
final class ReadBudget {
    /// The limit it started from.
    let limit: Int
    /// Bytes left.
    private(set) var remaining: Int

    /// A budget of `bytes`.
    init(bytes: Int) {
        limit = bytes
        remaining = bytes
    }

    /// The problem to report once a read was refused.
    var exhaustedProblem: String {
        "verification stopped: the playlists ask to read more than \(limit >> 30) GiB from the output"
    }

    /// Reads the regular file at `path` if it holds at most `limit` bytes and the budget allows.
    func read(_ path: String, limit: Int) -> OutputRead {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size <= limit else {
            return .unreadable
        }
        let size = Int(status.st_size)
        guard size <= remaining else { return .overBudget }
        guard let data = FileManager.default.contents(atPath: path), data.count <= limit else { return .unreadable }
        remaining -= max(size, data.count)
        return .bytes([UInt8](data))
    }
}

@available(*, unavailable, message: "one verification charges it")
extension ReadBudget: Sendable {}

/// The key file format: 16 raw bytes (what HLS key URIs return), or 32 hex digits as text.
public enum KeyFileFormat {
    /// The key in `bytes`, or nil when they hold neither form.
    public static func parse(_ bytes: [UInt8]) -> [UInt8]? {
        if bytes.count == 16 { return bytes }
        let text = String(decoding: bytes, as: UTF8.self).trimmingSpacesAndLineBreaks()
        guard let key = [UInt8](hex: text), key.count == 16 else { return nil }
        return key
    }
}
