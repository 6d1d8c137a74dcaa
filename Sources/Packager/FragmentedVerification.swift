import Crypto
import FoundationEssentials
import MediaFormats

/// `verify` of CMAF output (`--container fmp4`): the playlists' EXT-X-MAP and key lines, every init
/// segment's sample entry and protection boxes (`frma`, `schm`, `tenc`), every fragment's boxes and
/// their consistency (`mfhd` sequence, `tfdt` continuity, `trun` data offset and sizes against the
/// `mdat`, `senc`/`saiz`/`saio`), every slice's clear length recomputed by its own slice-header parse
/// against the `senc` map, every sample decrypted, and with a source every sample compared bit for bit
/// with the same conversion of the source.
struct FragmentedVerification {
    let directory: String
    var key: [UInt8]?
    let source: String?
    let maxPixels: Int
    var report = VerificationReport(method: "NONE", playlists: [], segments: 0, streams: [])
    let budget = ReadBudget(bytes: VerificationRun.readLimit)
    /// The key list of a `--key-period` output, when one was given: each key period's init segment
    /// (`tenc`) and key line name the key its segments decrypt with.
    var periods: KeyPeriodCheck?
    /// The pattern and segment duration of a `--watermark` output, to encode its variants again.
    var watermark: (pattern: WatermarkPattern, segmentDuration: Double)?

    /// True when the first media playlist `master.m3u8` names has an EXT-X-MAP: CMAF output.
    static func isFragmented(_ directory: String) -> Bool {
        guard let master = VerificationRun.readFile(directory + "/master.m3u8", limit: VerificationRun.playlistLimit),
            let parsed = try? ParsedMasterPlaylist(String(decoding: master, as: UTF8.self), name: "master.m3u8"),
            let first = parsed.variants.first?.uri, VerificationRun.isPlainFileName(first),
            let media = VerificationRun.readFile(directory + "/" + first, limit: VerificationRun.playlistLimit)
        else { return false }
        return String(decoding: media, as: UTF8.self).contains("\n#EXT-X-MAP:")
    }

    private mutating func problem(_ text: String) { report.problems.append(text) }

    private mutating func mismatch(_ text: String) {
        report.mismatchCount += 1
        if report.mismatches.count < VerificationRun.mismatchLines { report.mismatches.append(text) }
    }

    private mutating func read(_ name: String, limit: Int) -> [UInt8]? {
        guard VerificationRun.isPlainFileName(name) else {
            problem("'\(name)' is not a file inside the output directory")
            return nil
        }
        switch budget.read(directory + "/" + name, limit: limit) {
        case .bytes(let bytes): return bytes
        case .unreadable:
            problem("\(name) is missing, unreadable or too large")
            return nil
        case .overBudget:
            problem(budget.exhaustedProblem)
            return nil
        }
    }

    mutating func execute() throws(VerificationError) -> VerificationReport {
        guard let masterBytes = read("master.m3u8", limit: VerificationRun.playlistLimit) else { return report }
        let master: ParsedMasterPlaylist
        do {
            master = try ParsedMasterPlaylist(String(decoding: masterBytes, as: UTF8.self), name: "master.m3u8")
        } catch {
            problem("\(error)")
            return report
        }
        var names: [String] = []
        for uri in master.variants.map(\.uri) + master.media.compactMap({ $0["URI"] }) where !names.contains(uri) {
            names.append(uri)
        }
        guard names.count <= VerificationRun.playlistCountLimit else {
            problem("master.m3u8 names \(names.count) media playlists")
            return report
        }
        var playlists: [(name: String, playlist: ParsedMediaPlaylist, map: String)] = []
        for name in names {
            guard let bytes = read(name, limit: VerificationRun.playlistLimit) else { continue }
            let text = String(decoding: bytes, as: UTF8.self)
            do {
                let playlist = try ParsedMediaPlaylist(text, name: name)
                let maps = playlist.mapLines
                guard maps.count == 1 || (periods != nil && !maps.isEmpty), let uri = maps[0]["URI"] else {
                    problem(
                        maps.count > 1
                            ? "\(name): \(maps.count) EXT-X-MAPs, one per key period: give the key list (--key-file)"
                            : "\(name): needs exactly one EXT-X-MAP with a URI, has \(maps.count)")
                    continue
                }
                for tag in playlist.unknownTags { problem("unexpected tag at \(tag)") }
                if playlist.version != 6 {
                    problem("\(name): EXT-X-VERSION \(playlist.version ?? 0), not the 6 EXT-X-MAP needs")
                }
                if !playlist.endList { problem("\(name): no EXT-X-ENDLIST") }
                if let target = playlist.targetDuration {
                    for segment in playlist.segments where roundedDuration(segment.duration) > target {
                        problem(
                            "\(name) line \(segment.line): EXTINF \(segment.duration) rounds above TARGETDURATION \(target)"
                        )
                    }
                }
                let mapIndex = text.firstRange(of: "\n#EXT-X-MAP:")!.lowerBound
                if let keyIndex = text.firstRange(of: "\n#EXT-X-KEY:")?.lowerBound, keyIndex < mapIndex {
                    problem("\(name): an EXT-X-KEY comes before the EXT-X-MAP, so the init segment would be encrypted")
                }
                playlists.append((name, playlist, uri))
                report.playlists.append(name)
            } catch {
                problem("\(error)")
            }
        }
        let methods = Set(playlists.flatMap { $0.playlist.keyLines.compactMap { $0["METHOD"] } }).subtracting(["NONE"])
        if methods.count > 1 { problem("the playlists mix encryption methods: \(methods.sorted())") }
        let method = methods.first ?? "NONE"
        report.method = method
        for entry in playlists {
            for line in entry.playlist.keyLines where method.hasPrefix("SAMPLE-AES") && line["IV"] != nil {
                problem("\(entry.name): an EXT-X-KEY with \(method) carries an IV; CENC's IVs are in tenc and senc")
            }
            if method != "NONE" && entry.playlist.keyLines.isEmpty { problem("\(entry.name) carries no EXT-X-KEY") }
        }
        if method != "NONE" && method != "AES-128" && method != "SAMPLE-AES" && method != "SAMPLE-AES-CTR" {
            problem("EXT-X-KEY METHOD '\(method)' is not one GuardPlay writes in fMP4")
            return report
        }
        if let periods, method != "NONE" {
            report.problems += periods.problems(
                playlists.map { ($0.name, $0.playlist.segments) }, notes: &report.notes)
        } else if method != "NONE" {
            try resolveKey(playlists.flatMap { $0.playlist.keyLines.map(\.dictionary) }, method: method)
        }

        // A --watermark output: its pattern, to encode the variants again from the source.
        var manifest: WatermarkManifest? = nil
        do {
            manifest = try WatermarkManifest.load(from: directory)
            watermark = try manifest?.source
            if let manifest { report.notes.append(manifest.verificationNote) }
        } catch {
            problem(error.message)
        }
        var layout: OutputLayout? = nil
        if let source {
            do {
                let reader = try SourceReader(
                    path: source, stillFrames: 250, stillGOP: 150, maxPixels: maxPixels, watermark: watermark)
                layout = OutputLayout(
                    hasVideo: reader.plan.video != nil, audioCount: reader.plan.audio.count, separateAudio: true)
            } catch {
                throw VerificationError(
                    kind: .source, sourceKind: error.kind, message: "cannot read the source: \(error.message)")
            }
            let expected = Set(layout!.playlists.map { $0.name + ".m3u8" })
            if expected != Set(names) {
                mismatch("the source makes playlists \(expected.sorted()) but master.m3u8 names \(names.sorted())")
            }
        }
        for entry in playlists {
            let slot = layout?.playlists.first { $0.name + ".m3u8" == entry.name }?.slots.first
            guard manifest?.playlists.contains(entry.name) == true else {
                try verifyTrack(entry.name, entry.playlist, map: entry.map, method: method, slot: slot)
                continue
            }
            // A playlist with variants is checked twice: as listed (A), then with every segment's B file.
            try verifyTrack(entry.name, entry.playlist, map: entry.map, method: method, slot: slot, variant: .a)
            var problems: [String] = []
            let other = WatermarkManifest.variantB(of: entry.playlist, name: entry.name) { problems.append($0) }
            for text in problems { problem(text) }
            try verifyTrack(
                entry.name + " (variant B)", other, map: entry.map, method: method, slot: slot, variant: .b)
        }
        if method != "AES-128" && periods == nil && !FileManager.default.fileExists(atPath: directory + "/manifest.mpd")
        {
            problem("no manifest.mpd beside master.m3u8")
        }
        return report
    }

    private mutating func resolveKey(_ lines: [[String: String]], method: String) throws(VerificationError) {
        if key == nil, let uri = lines.compactMap({ $0["URI"] }).first, !uri.isEmpty, !uri.contains(":") {
            let path = uri.hasPrefix("/") ? uri : directory + "/" + uri
            if let data = FileManager.default.contents(atPath: path), let parsed = KeyFileFormat.parse([UInt8](data)) {
                key = parsed
                report.notes.append("key read from the key URI \(uri)")
            }
        }
        guard key != nil else {
            throw VerificationError(
                kind: .keyMissing, sourceKind: nil,
                message: "the output is \(method) encrypted: give its key (--key-file or --key) to decrypt it")
        }
    }

    // MARK: One track

    /// What an init segment declares.
    struct TrackInfo {
        var isVideo: Bool
        var timescale: UInt32
        var codec: String
        var scheme: CENCScheme?
        var perSampleIVSize = 0
        var constantIV: [UInt8] = []
        /// The `tenc` default key ID.
        var keyID: [UInt8] = []
        var crypt = 0
        var skip = 0
        var parameterSets: [[UInt8]] = []
    }

    private func child(_ bytes: [UInt8], _ box: Box, _ type: String, structure: String) throws(FormatError) -> Box {
        let headers = ["stsd": 8, "encv": 78, "avc1": 78, "hvc1": 78, "enca": 28, "mp4a": 28, "ac-3": 28, "ec-3": 28]
        var reader = BoxReader(bytes, range: box.body, structure: structure + "/" + box.type)
        try reader.skip(headers[box.type] ?? 0)
        return try BoxReader.one(type, in: try reader.boxes(), structure: structure + "/" + box.type)
    }

    private func readInit(_ bytes: [UInt8], name: String, method: String) throws(FormatError) -> TrackInfo {
        var top = BoxReader(bytes, structure: name)
        let moov = try BoxReader.one("moov", in: try top.boxes(), structure: name)
        let trak = try child(bytes, moov, "trak", structure: name)
        let mdia = try child(bytes, trak, "mdia", structure: name)
        var mdhd = BoxReader(bytes, box: try child(bytes, mdia, "mdhd", structure: name), structure: name)
        let version = try mdhd.versionAndFlags().version
        try mdhd.skip(version == 1 ? 16 : 8)
        let timescale = try mdhd.u32()
        guard timescale > 0 else { throw FormatError(name + " mdhd", "timescale 0") }
        let stbl = try child(bytes, try child(bytes, mdia, "minf", structure: name), "stbl", structure: name)
        let stsd = try child(bytes, stbl, "stsd", structure: name)
        var stsdReader = BoxReader(bytes, range: stsd.body, structure: name + " stsd")
        try stsdReader.skip(8)
        let entries = try stsdReader.boxes()
        guard entries.count == 1, let entry = entries.first else {
            throw FormatError(name + " stsd", "holds \(entries.count) sample entries, not one")
        }
        let encrypted = method == "SAMPLE-AES" || method == "SAMPLE-AES-CTR"
        guard ["encv", "enca", "avc1", "hvc1", "mp4a", "ac-3", "ec-3"].contains(entry.type) else {
            throw FormatError(name + " stsd", "sample entry '\(entry.type)' is not one GuardPlay writes")
        }
        let isVideo = entry.type == "encv" || entry.type == "avc1" || entry.type == "hvc1"
        if encrypted != (entry.type.hasPrefix("enc")) {
            throw FormatError(name + " stsd", "sample entry '\(entry.type)' under METHOD=\(method)")
        }
        var info = TrackInfo(isVideo: isVideo, timescale: timescale, codec: isVideo ? "h264" : "aac")
        // Audio: the codec from the sample entry, or under encryption from `frma`, read below.
        let audioCodecs = ["mp4a": "aac", "ac-3": "ac3", "ec-3": "eac3"]
        if let codec = audioCodecs[entry.type] { info.codec = codec }
        if isVideo, let record = try hevcConfiguration(bytes, entry, structure: name) {
            info.codec = "hevc"
            info.parameterSets = record.nalUnits
        } else if isVideo {
            let avcC = try child(bytes, entry, "avcC", structure: name)
            let record = Array(bytes[avcC.body])
            info.parameterSets =
                try AVCConfiguration(extradata: record).sequenceParameterSets
                + AVCConfiguration(extradata: record).pictureParameterSets
        }
        guard encrypted else { return info }
        let sinf = try child(bytes, entry, "sinf", structure: name)
        var frma = BoxReader(bytes, box: try child(bytes, sinf, "frma", structure: name), structure: name)
        let original = try frma.fourCC()
        if !isVideo, let codec = audioCodecs[original] { info.codec = codec }
        if isVideo ? original != (info.codec == "hevc" ? "hvc1" : "avc1") : audioCodecs[original] == nil {
            throw FormatError(
                name + " frma", "original format '\(original)' for a \(isVideo ? "video" : "audio") track")
        }
        var schm = BoxReader(bytes, box: try child(bytes, sinf, "schm", structure: name), structure: name)
        _ = try schm.versionAndFlags()
        let schemeType = try schm.fourCC()
        let expected: CENCScheme = method == "SAMPLE-AES" ? .cbcs : .cenc
        guard schemeType == expected.rawValue, try schm.u32() == 0x0001_0000 else {
            throw FormatError(
                name + " schm", "scheme '\(schemeType)' where METHOD=\(method) needs '\(expected.rawValue)' version 1.0"
            )
        }
        info.scheme = expected
        let schi = try child(bytes, sinf, "schi", structure: name)
        let tenc = try TrackEncryptionBox(
            bytes, box: try child(bytes, schi, "tenc", structure: name), structure: name)
        let tencVersion = tenc.version
        let isProtected = tenc.isProtected
        info.perSampleIVSize = tenc.perSampleIVSize
        info.keyID = tenc.keyID
        info.constantIV = tenc.constantIV
        info.crypt = tenc.cryptBlocks
        info.skip = tenc.skipBlocks
        guard isProtected == 1 else { throw FormatError(name + " tenc", "default_isProtected is \(isProtected)") }
        if expected == .cbcs {
            guard tencVersion == 1, info.perSampleIVSize == 0, info.constantIV.count == 16 else {
                throw FormatError(name + " tenc", "cbcs needs version 1, a 16-byte constant IV and no per-sample IV")
            }
            let wanted = isVideo ? (1, 9) : (0, 0)
            guard (info.crypt, info.skip) == wanted else {
                throw FormatError(name + " tenc", "pattern \(info.crypt):\(info.skip), not \(wanted.0):\(wanted.1)")
            }
        } else {
            guard info.perSampleIVSize == 8 else {
                throw FormatError(name + " tenc", "cenc with \(info.perSampleIVSize)-byte IVs, not 8")
            }
        }
        return info
    }

    private mutating func verifyTrack(
        _ name: String, _ playlist: ParsedMediaPlaylist, map: String, method: String, slot: Int?,
        variant: WatermarkVariant? = nil
    ) throws(VerificationError) {
        guard let initBytes = read(map, limit: VerificationRun.playlistLimit) else { return }
        var info: TrackInfo
        do {
            info = try readInit(initBytes, name: map, method: method)
        } catch {
            problem("\(error)")
            return
        }
        var currentMap = map
        var check = VerificationReport.StreamCheck(
            playlist: name, kind: info.isVideo ? "video" : "audio", codec: info.codec, pid: nil, frames: 0,
            decryptedUnits: 0)
        check.isFragmented = true
        var cipher = info.scheme.flatMap {
            try? CENCSampleCipher(scheme: $0, key: trackKey(info) ?? [], encrypt: false)
        }
        var clearLength: any NALClearLength = info.codec == "hevc" ? HEVCClearLength() : H264ClearLength()
        // The init segment's parameter sets (avcC or hvcC), which slices of the segments after it use.
        func takeParameterSets(of info: TrackInfo, from map: String) {
            let record = info.codec == "hevc" ? "hvcC" : "avcC"
            for (index, set) in info.parameterSets.enumerated() {
                do {
                    _ = try clearLength.clearBytes(of: set, structure: "\(map) \(record) NAL unit \(index)")
                } catch {
                    problem("\(error)")
                }
            }
        }
        takeParameterSets(of: info, from: map)
        var expected: ExpectedSamples? = nil
        if let source, let slot {
            do {
                expected = try ExpectedSamples(
                    source: source, slot: slot, maxPixels: maxPixels, watermark: watermark, variant: variant)
                check.framesEqual = 0
                check.comparison =
                    variant.map {
                        "against a deterministic libx264 re-encode with variant \($0.rawValue.uppercased())'s watermark"
                    } ?? "bit-exact copy"
            } catch {
                throw VerificationError(
                    kind: .source, sourceKind: error.kind, message: "cannot read the source: \(error.message)")
            }
        }
        var nextDecodeTime: UInt64? = nil
        for (index, segment) in playlist.segments.enumerated() {
            if let periodMap = segment.map?["URI"], periodMap != currentMap {
                // A new key period: its init segment names the key the following segments take.
                guard let periodInit = read(periodMap, limit: VerificationRun.playlistLimit) else { continue }
                do {
                    info = try readInit(periodInit, name: periodMap, method: method)
                } catch {
                    problem("\(error)")
                    continue
                }
                currentMap = periodMap
                cipher = info.scheme.flatMap {
                    try? CENCSampleCipher(scheme: $0, key: trackKey(info) ?? [], encrypt: false)
                }
                takeParameterSets(of: info, from: periodMap)
            }
            if let problem = periodProblem(segment, info: info, map: currentMap) { self.problem(problem) }
            guard var bytes = read(segment.uri, limit: VerificationRun.segmentLimit) else { continue }
            report.segments += 1
            if method == "AES-128" {
                guard let key = periods?.key(for: segment.key) ?? key,
                    let iv = segment.key?["IV"].flatMap({ [UInt8](hex: $0) }), iv.count == 16,
                    let clear = try? AES128Padded.decrypt(bytes, key: key, iv: iv)
                else {
                    problem("\(segment.uri): cannot be decrypted with AES-128 and its EXT-X-KEY IV")
                    continue
                }
                bytes = clear
            }
            let place = "\(segment.uri)"
            let samples: [[UInt8]]
            do {
                samples = try readFragment(
                    bytes, place: place, sequence: index + 1, info: info, nextDecodeTime: &nextDecodeTime,
                    duration: segment.duration, clearLength: &clearLength, cipher: cipher,
                    check: &check)
            } catch {
                problem("\(error)")
                if expected != nil {
                    // The samples after an unreadable fragment would not line up with the source's.
                    expected = nil
                    check.comparison = "until \(segment.uri), which could not be read"
                }
                continue
            }
            check.frames += samples.count
            if var pending = expected {
                for (number, sample) in samples.enumerated() {
                    let want: [UInt8]?
                    do {
                        want = try pending.next()
                    } catch {
                        throw VerificationError(
                            kind: .source, sourceKind: error.kind, message: "cannot read the source: \(error.message)")
                    }
                    if want == sample {
                        check.framesEqual! += 1
                    } else {
                        mismatch(
                            "\(place) sample \(number): \(want == nil ? "the source has no more frames" : "differs from the source")"
                        )
                    }
                }
                expected = pending
            }
        }
        if var pending = expected {
            check.sourceFrames = pending.produced
            while (try? pending.next()) != nil { check.sourceFrames = pending.produced }
            check.sourceFrames = pending.produced
            if check.sourceFrames != check.frames {
                mismatch("\(name): \(check.frames) samples, the source \(check.sourceFrames ?? 0)")
            }
        }
        report.streams.append(check)
    }

    /// Checks one fragment and returns its samples, decrypted.
    private func readFragment(
        _ bytes: [UInt8], place: String, sequence: Int, info: TrackInfo, nextDecodeTime: inout UInt64?,
        duration: Double, clearLength: inout any NALClearLength,
        cipher: CENCSampleCipher?,
        check: inout VerificationReport.StreamCheck
    ) throws(FormatError) -> [[UInt8]] {
        var top = BoxReader(bytes, structure: place)
        let boxes = try top.boxes()
        guard boxes.map(\.type) == ["moof", "mdat"] else {
            throw FormatError(place, "holds boxes \(boxes.map(\.type)), not one moof and one mdat")
        }
        let moof = boxes[0]
        let mdat = boxes[1]
        var moofReader = BoxReader(bytes, box: moof, structure: place)
        let moofChildren = try moofReader.boxes()
        var mfhd = BoxReader(
            bytes, box: try BoxReader.one("mfhd", in: moofChildren, structure: place + " moof"), structure: place)
        _ = try mfhd.versionAndFlags()
        let number = try mfhd.u32()
        if number != sequence { throw FormatError(place + " mfhd", "sequence number \(number), expected \(sequence)") }
        let traf = try BoxReader.one("traf", in: moofChildren, structure: place + " moof")
        var trafReader = BoxReader(bytes, box: traf, structure: place + " moof")
        let children = try trafReader.boxes()
        let structure = place + " moof/traf"
        var tfhd = BoxReader(
            bytes, box: try BoxReader.one("tfhd", in: children, structure: structure), structure: structure)
        let tfhdFlags = try tfhd.versionAndFlags().flags
        _ = try tfhd.u32()
        guard tfhdFlags & 0x02_0000 != 0, tfhdFlags & 0x01 == 0 else {
            throw FormatError(
                structure + " tfhd", "offsets are not from the moof (flags \(String(tfhdFlags, radix: 16)))")
        }
        if tfhdFlags & 0x02 != 0 { _ = try tfhd.u32() }
        var defaultDuration: UInt32 = 0
        var defaultSize: UInt32 = 0
        if tfhdFlags & 0x08 != 0 { defaultDuration = try tfhd.u32() }
        if tfhdFlags & 0x10 != 0 { defaultSize = try tfhd.u32() }
        var tfdt = BoxReader(
            bytes, box: try BoxReader.one("tfdt", in: children, structure: structure), structure: structure)
        let tfdtVersion = try tfdt.versionAndFlags().version
        let decodeTime = tfdtVersion == 1 ? try tfdt.u64() : UInt64(try tfdt.u32())
        if let expected = nextDecodeTime, expected != decodeTime {
            throw FormatError(
                structure + " tfdt", "decoding time \(decodeTime), but the previous fragment ends at \(expected)")
        }
        let run = try TrackRunBox(
            bytes, box: try BoxReader.one("trun", in: children, structure: structure), structure: structure,
            defaultDuration: defaultDuration, defaultSize: defaultSize)
        let count = run.sizes.count
        let dataOffset = run.dataOffset
        let sizes = run.sizes
        let ticks = run.totalDuration
        nextDecodeTime = decodeTime + ticks
        if abs(Double(ticks) / Double(info.timescale) - duration) > 0.0005 {
            throw FormatError(
                place, "its samples last \(Double(ticks) / Double(info.timescale)) s but EXTINF says \(duration)")
        }
        let payloadStart = mdat.body.lowerBound - moof.range.lowerBound
        guard dataOffset == payloadStart else {
            throw FormatError(
                structure + " trun", "data offset \(dataOffset) does not point at the mdat payload (\(payloadStart))")
        }
        guard sizes.reduce(0, +) == mdat.body.count else {
            throw FormatError(
                place, "trun's sample sizes add up to \(sizes.reduce(0, +)) bytes, the mdat holds \(mdat.body.count)")
        }

        // The encryption records.
        var records: [(iv: [UInt8], subsamples: [Subsample])] = Array(repeating: ([], []), count: count)
        if cipher != nil {
            let senc = try SampleEncryptionBox(
                bytes, box: try BoxReader.one("senc", in: children, structure: structure), structure: structure,
                ivSize: info.perSampleIVSize, sampleSizes: sizes)
            records = senc.records.map { (iv: $0.iv, subsamples: $0.subsamples) }
            let firstRecord = senc.firstRecord - moof.range.lowerBound
            let recordSizes = senc.recordSizes
            let infoSizes = try SampleAuxiliaryInformationSizes(
                bytes, box: try BoxReader.one("saiz", in: children, structure: structure), structure: structure,
                sampleCount: count
            ).sizes
            guard infoSizes == recordSizes else {
                throw FormatError(
                    structure + " saiz",
                    "sizes \(infoSizes.prefix(8)) do not match senc's records \(recordSizes.prefix(8))")
            }
            let offsets = try SampleAuxiliaryInformationOffsets(
                bytes, box: try BoxReader.one("saio", in: children, structure: structure), structure: structure
            ).offsets
            guard offsets.count == 1, let offset = offsets.first else {
                throw FormatError(structure + " saio", "needs exactly one offset")
            }
            guard offset == firstRecord else {
                throw FormatError(
                    structure + " saio",
                    "offset \(offset) does not point at senc's first record (\(firstRecord) from the moof)")
            }
        }

        // The samples: clear ranges recomputed, then decrypted.
        var samples: [[UInt8]] = []
        var start = mdat.body.lowerBound
        for index in 0..<count {
            var sample = Array(bytes[start..<(start + sizes[index])])
            start += sizes[index]
            if info.isVideo {
                let units = try Self.units(sample, index: index, place: place, state: &clearLength)
                if let cipher {
                    let recomputed = SubsampleMap.make(units, scheme: cipher.scheme)
                    guard recomputed == records[index].subsamples else {
                        throw FormatError(
                            place,
                            "sample \(index): senc maps subsamples \(Self.describe(records[index].subsamples)) but the slice "
                                + "headers give \(Self.describe(recomputed))")
                    }
                }
            } else if cipher != nil, !records[index].subsamples.isEmpty {
                throw FormatError(place, "audio sample \(index) is signalled with subsamples; audio is whole-block")
            }
            if let cipher {
                do {
                    try cipher.process(
                        &sample, subsamples: records[index].subsamples,
                        iv: info.perSampleIVSize == 0 ? info.constantIV : records[index].iv, crypt: info.crypt,
                        skip: info.skip)
                } catch {
                    throw FormatError(place, "sample \(index) cannot be decrypted: \(error)")
                }
                check.decryptedUnits += 1
            }
            samples.append(sample)
        }
        return samples
    }

    /// The `hvcC` record of a video sample entry, or nil when it has none (H.264).
    private func hevcConfiguration(_ bytes: [UInt8], _ entry: Box, structure: String) throws(FormatError)
        -> HEVCDecoderConfiguration?
    {
        var reader = BoxReader(bytes, range: entry.body, structure: structure + "/" + entry.type)
        try reader.skip(78)
        guard try reader.boxes().contains(where: { $0.type == "hvcC" }) else { return nil }
        let hvcC = try child(bytes, entry, "hvcC", structure: structure)
        return try HEVCDecoderConfiguration(parsing: Array(bytes[hvcC.body]), structure: structure + " hvcC")
    }

    /// Each NAL unit of the length-prefixed video `sample` as its stored size and clear bytes, from its
    /// own slice header parse.
    private static func units(_ sample: [UInt8], index: Int, place: String, state: inout any NALClearLength)
        throws(FormatError) -> [(size: Int, clear: Int)]
    {
        var units: [(size: Int, clear: Int)] = []
        var offset = 0
        while offset < sample.count {
            guard sample.count - offset >= 4 else {
                throw FormatError(place, "sample \(index) ends inside a NAL length")
            }
            let length = Int(sample.bigEndianUInt32(at: offset))
            guard length > 0, length <= sample.count - offset - 4 else {
                throw FormatError(place, "sample \(index): NAL length \(length) at \(offset) runs past the sample")
            }
            let nal = (offset + 4)..<(offset + 4 + length)
            let clear = try sample.withBytes { raw throws(FormatError) in
                try state.clearBytes(
                    of: UnsafeRawBufferPointer(rebasing: raw[nal]),
                    structure: "\(place) sample \(index), NAL unit \(units.count) at byte \(offset)")
            }
            units.append((4 + length, 4 + clear))
            offset += 4 + length
        }
        return units
    }

    private static func describe(_ map: [Subsample]) -> String {
        map.prefix(6).map { "\($0.clear)+\($0.protected)" }.joined(separator: ",") + (map.count > 6 ? ",…" : "")
    }
}

/// The samples the packager makes of one source stream, in order, by the same conversion.
struct ExpectedSamples {
    private let reader: SourceReader
    private let slot: Int
    private var builder: VideoSampleConversion
    private var queue: [[UInt8]] = []
    /// Samples handed out so far.
    private(set) var produced = 0

    /// The watermark variant handed out when the source is read with `watermark`.
    private let variant: WatermarkVariant?

    init(
        source: String, slot: Int, maxPixels: Int,
        watermark: (pattern: WatermarkPattern, segmentDuration: Double)? = nil, variant: WatermarkVariant? = nil
    ) throws(PackagingError) {
        reader = try SourceReader(
            path: source, stillFrames: 250, stillGOP: 150, maxPixels: maxPixels, watermark: watermark)
        self.slot = slot
        self.variant = variant
        builder = VideoSampleConversion(codec: reader.plan.streams[slot].codec)
    }

    /// The next sample, or nil at the end of the stream.
    mutating func next() throws(PackagingError) -> [UInt8]? {
        while queue.isEmpty {
            guard let (unitSlot, unit) = try reader.next() else { return nil }
            guard unitSlot == slot, unit.variant == nil || unit.variant == variant else { continue }
            do {
                if !reader.plan.streams[slot].codec.isAudio {
                    queue.append(try builder.sample(bytes: unit.bytes, nalUnits: unit.nalUnits).bytes)
                } else if reader.plan.streams[slot].codec.isDolby {
                    queue.append(unit.bytes)
                } else {
                    queue += try AACSampleBuilder.samples(unit.bytes)
                }
            } catch {
                throw PackagingError(.inputCorrupt, "the source's stream cannot be converted: \(error)")
            }
        }
        produced += 1
        return queue.removeFirst()
    }
}
