import Crypto
import FoundationEssentials
import Glibc
import MediaFormats

extension VerificationRun {
    /// Checks one media playlist's segments and merges what was found into the report.
    mutating func verifyMediaPlaylist(
        name: String, _ playlist: ParsedMediaPlaylist, expected: ExpectedAccessUnits?, slots: [Int]?
    ) {
        let directory = self.directory
        let budget = self.budget
        let checker = PlaylistVerifier(
            name: name, playlist: playlist, method: method, cipher: cipher, expected: expected,
            slots: slots,
            read: { uri in budget.read(directory + "/" + uri, limit: VerificationRun.segmentLimit) })
        checker.expectedKey = key
        checker.periods = periods
        checker.run()
        sourceFailure = sourceFailure ?? checker.sourceFailure
        report.segments += playlist.segments.count
        report.problems += checker.problems
        report.mismatches += checker.mismatches.prefix(max(0, VerificationRun.mismatchLines - report.mismatches.count))
        report.mismatchCount += checker.mismatchCount
        report.streams += checker.checks.keys.sorted().map { checker.checks[$0]! }
        idrPictures.merge(checker.idrPictures) { $0.merging($1) { first, _ in first } }
        foundCodecs[name] = checker.codecs.keys.sorted().map { checker.codecs[$0]! }
    }

    /// Reads a regular file of at most `limit` bytes.
    static func readFile(_ path: String, limit: Int) -> [UInt8]? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, Int(status.st_size) <= limit,
            let data = FileManager.default.contents(atPath: path)
        else { return nil }
        return [UInt8](data)
    }

    /// Checks that every I-frame entry's byte range holds PAT, PMT and exactly one IDR picture, the same
    /// as the media playlist's at that time, and that its EXTINF runs to the next I-frame.
    mutating func verifyIFrames(name: String, _ playlist: ParsedMediaPlaylist) {
        if method == "AES-128" {
            problem("\(name): an I-frame playlist cannot point into whole-segment AES-128 segments")
            return
        }
        var cache: (uri: String, bytes: [UInt8])? = nil
        var times: [Int64?] = []
        for (index, entry) in playlist.segments.enumerated() {
            report.iFramesChecked += 1
            let place = "\(name) entry \(index + 1)"
            guard let range = entry.byteRange else {
                problem("\(place) has no EXT-X-BYTERANGE")
                times.append(nil)
                continue
            }
            guard VerificationRun.isPlainFileName(entry.uri) else {
                problem("\(place): '\(entry.uri)' is not a file inside the output directory")
                times.append(nil)
                continue
            }
            if cache?.uri != entry.uri {
                switch budget.read(directory + "/" + entry.uri, limit: VerificationRun.segmentLimit) {
                case .bytes(let bytes): cache = (entry.uri, bytes)
                case .unreadable: cache = nil
                case .overBudget:
                    problem(budget.exhaustedProblem)
                    return
                }
            }
            // Subtracting, not adding: the sum of a hostile offset and length could overflow.
            guard let file = cache?.bytes, range.offset % 188 == 0, range.length % 188 == 0,
                range.offset <= file.count, range.length <= file.count - range.offset, range.length >= 3 * 188
            else {
                problem(
                    "\(place): byte range \(range.length)@\(range.offset) is not whole TS packets inside \(entry.uri)")
                times.append(nil)
                continue
            }
            var reader = TransportStreamReader(name: place)
            let slice = Array(file[range.offset..<(range.offset + range.length)])
            let packets: [PESPacket]
            do {
                packets = try reader.readAll(slice)
            } catch {
                problem("\(place): \(error)")
                times.append(nil)
                continue
            }
            let firstPID = UInt16(slice[1] & 0x1F) << 8 | UInt16(slice[2])
            if firstPID != 0 || reader.tableCount.programMap == 0 {
                problem("\(place): the range does not start with a PAT followed by a PMT")
            }
            for issue in reader.issues { problem(issue) }
            let video = packets.filter { packet in
                reader.programMap?.streams.first { $0.pid == packet.pid }.flatMap {
                    ElementaryCodec.from(streamType: $0.streamType)?.codec
                } == .h264
            }
            guard video.count == 1, packets.count == 1, let picture = video.first, let pts = picture.pts else {
                problem(
                    "\(place): the range holds \(video.count) video and \(packets.count - video.count) other PES packets, not one picture"
                )
                times.append(nil)
                continue
            }
            times.append(pts)
            var nals: [[UInt8]] = []
            do {
                nals = try PlaylistVerifier.clearNALUnits(
                    picture.payload, cipher: periods == nil ? cipher : periods!.sampleAESCipher(for: entry.key))
            } catch {
                problem("\(place): cannot decrypt the picture: \(error)")
                continue
            }
            if !nals.contains(where: { NALUnitType.of($0[0]) == NALUnitType.idrSlice }) {
                mismatch("\(place): the range's picture is not an IDR picture")
            } else if idrPictures[entry.uri]?[pts] == PlaylistVerifier.digest(of: nals) {
                report.iFramesEqual += 1
            } else {
                mismatch(
                    "\(place): the range's IDR picture (pts \(pts)) is not the one \(entry.uri) carries at that time")
            }
        }
        for index in 0..<max(0, times.count - 1) {
            guard let time = times[index], let next = times[index + 1] else { continue }
            let gap = Double(next - time) / 90_000
            if abs(playlist.segments[index].duration - gap) > 0.002 {
                problem(
                    "\(name) entry \(index + 1): EXTINF \(playlist.segments[index].duration) but the next I-frame is \(gap) s later"
                )
            }
        }
    }

    /// Checks the master playlist's attributes: required ones present, CODECS matching the streams,
    /// BANDWIDTH and AVERAGE-BANDWIDTH within 10 % of what the segments measure.
    mutating func checkMaster(_ master: ParsedMasterPlaylist, playlists: [String: ParsedMediaPlaylist]) {
        if !master.independentSegments { problem("master.m3u8: no EXT-X-INDEPENDENT-SEGMENTS") }
        var groups: [String: [AttributeList]] = [:]
        for media in master.media {
            guard media["TYPE"] == "AUDIO", let group = media["GROUP-ID"], media["NAME"] != nil, media["URI"] != nil
            else {
                problem("master.m3u8: an EXT-X-MEDIA lacks TYPE=AUDIO, GROUP-ID, NAME or URI")
                continue
            }
            groups[group, default: []].append(media)
        }
        for (group, members) in groups where members.filter({ $0["DEFAULT"] == "YES" }).count != 1 {
            problem(
                "master.m3u8: audio group \(group) has \(members.filter { $0["DEFAULT"] == "YES" }.count) DEFAULT renditions, one expected"
            )
        }
        for variant in master.variants {
            let place = "master.m3u8 variant \(variant.uri)"
            guard let declared = variant.attributes["BANDWIDTH"].flatMap(Int.init),
                let average = variant.attributes["AVERAGE-BANDWIDTH"].flatMap(Int.init),
                let codecText = variant.attributes["CODECS"]
            else {
                problem("\(place) lacks BANDWIDTH, AVERAGE-BANDWIDTH or CODECS")
                continue
            }
            let declaredCodecs = Set(codecText.split(separator: ",").map(String.init))
            let members = variant.attributes["AUDIO"].map { groups[$0] ?? [] } ?? []
            if let group = variant.attributes["AUDIO"], groups[group] == nil {
                problem("\(place) names audio group \(group), which no EXT-X-MEDIA defines")
            }
            var found = Set(foundCodecs[variant.uri] ?? [])
            for member in members { found.formUnion(foundCodecs[member["URI"] ?? ""] ?? []) }
            let normalised = Set(declaredCodecs.map { ["mp4a.40.5", "mp4a.40.29"].contains($0) ? "mp4a.40.2" : $0 })
            if !found.isEmpty && normalised != found && declaredCodecs != found {
                problem(
                    "\(place): CODECS \"\(codecText)\" but the streams are \(found.sorted().joined(separator: ","))")
            }
            if declaredCodecs.contains(where: { $0.hasPrefix("avc1.") }) {
                if variant.attributes["RESOLUTION"] == nil || variant.attributes["FRAME-RATE"] == nil {
                    problem("\(place) carries video but lacks RESOLUTION or FRAME-RATE")
                }
                checkResolution(place, variant.attributes["RESOLUTION"])
            }
            var measured = rates(of: variant.uri, playlists)
            let renditionRates = members.compactMap { $0["URI"] }.filter { $0 != variant.uri }.map {
                rates(of: $0, playlists)
            }
            measured.peak += renditionRates.map(\.peak).max() ?? 0
            measured.average += renditionRates.map(\.average).max() ?? 0
            checkRate("\(place) BANDWIDTH", declared, measured.peak)
            checkRate("\(place) AVERAGE-BANDWIDTH", average, measured.average)
        }
        for variant in master.iFrameVariants {
            guard let uri = variant["URI"], let declared = variant["BANDWIDTH"].flatMap(Int.init),
                variant["CODECS"] != nil, variant["RESOLUTION"] != nil
            else {
                problem("master.m3u8: an EXT-X-I-FRAME-STREAM-INF lacks URI, BANDWIDTH, CODECS or RESOLUTION")
                continue
            }
            checkResolution("master.m3u8 I-frame variant \(uri)", variant["RESOLUTION"])
            checkRate("master.m3u8 I-frame variant \(uri) BANDWIDTH", declared, rates(of: uri, playlists).peak)
        }
    }

    /// A RESOLUTION must be `WxH` with both sides above 0: `0x0` is what a picture size FFmpeg could not
    /// decode (an SPS claiming 65536×65536) would publish.
    mutating func checkResolution(_ place: String, _ text: String?) {
        guard let text else { return }
        let sides = text.split(separator: "x", omittingEmptySubsequences: false).map { Int($0) ?? 0 }
        if sides.count != 2 || sides.contains(where: { $0 <= 0 }) {
            problem("\(place): RESOLUTION=\(text) is not a picture size (both sides must be above 0)")
        }
    }

    private mutating func checkRate(_ what: String, _ declared: Int, _ measured: Double) {
        guard measured > 0 else { return }
        if Double(declared) < measured * 0.9 || Double(declared) > measured * 1.1 {
            problem("\(what) is \(declared) but the segments measure \(clampedInt(measured.rounded())) bit/s")
        }
    }

    /// Peak and average bit rates of a media playlist: segment (or byte range) bits over EXTINF.
    private func rates(of name: String, _ playlists: [String: ParsedMediaPlaylist]) -> (peak: Double, average: Double) {
        guard let playlist = playlists[name] else { return (0, 0) }
        var peak = 0.0
        var bits = 0.0
        var seconds = 0.0
        for segment in playlist.segments {
            // In Double: a file's size (a sparse file can claim nearly 2^63 bytes) times 8 overflows Int.
            let size: Double
            if let range = segment.byteRange {
                size = Double(range.length)
            } else {
                var status = stat()
                guard VerificationRun.isPlainFileName(segment.uri), stat(directory + "/" + segment.uri, &status) == 0
                else { continue }
                size = Double(status.st_size)
            }
            bits += size * 8
            seconds += segment.duration
            if segment.duration > 0 { peak = max(peak, size * 8 / segment.duration) }
        }
        return (peak, seconds > 0 ? bits / seconds : peak)
    }
}
