import MediaFormats
import SystemSupport

/// The DASH MPD: its reader over arbitrary text, and the writer's round trip (a manifest made from the
/// fuzz input, written by `DASHManifest.render`, read back by `ParsedDASHManifest`, must be what was
/// written).
enum DASHFuzzing {
    /// The reader over arbitrary bytes: a manifest it accepts stays inside its limits.
    static func read(_ data: UnsafeRawBufferPointer) {
        guard let text = String(validating: data, as: UTF8.self),
            let parsed = try? ParsedDASHManifest(text, structure: "fuzz.mpd")
        else { return }
        precondition(!parsed.periods.isEmpty && parsed.duration.isFinite && parsed.duration >= 0)
        for set in parsed.periods.flatMap(\.adaptationSets) {
            precondition(set.keyID.map { $0.count == 16 } ?? true)
            for representation in set.representations {
                precondition(representation.timescale > 0)
                precondition(representation.segments.count <= ParsedDASHManifest.segmentLimit)
            }
        }
    }

    /// Characters the writer's escaped strings are drawn from: XML's specials, spaces, tab and line
    /// breaks, non-ASCII.
    static let alphabet = Array("aZ09_-./:?=$%&<>\"' \t\n\r\u{e9}\u{1F600}")
    /// Characters of an RFC 6381 codec string, as the packager writes one (escaped like every other string).
    static let codecAlphabet = Array("avc1.64001Fmp4a.40.2hvc1.L93.B0ec-3")

    /// A manifest from the input, written, read back: every field the writer writes comes back, with
    /// the seconds it prints to 3 decimals rounded as it rounds them.
    static func roundTrip(_ data: UnsafeRawBufferPointer) {
        var input = FuzzBytes(data)
        let scheme = input.bool() ? input.pick(["cbcs", "cenc"]) : nil
        var manifest = DASHManifest(
            periods: [], duration: Double(input.integer(4)) / 1000 + Double(input.int(in: 0...999)) / 1e6,
            scheme: scheme, licenseURL: scheme != nil && input.bool() ? input.string(from: alphabet, limit: 24) : nil)
        // One Period, or several as key rotation writes them, each under its own key ID.
        var periodStart = 0.0
        for number in 0..<input.int(in: 1...3) {
            if number > 0 { periodStart += Double(input.integer(3)) / 1000 }
            var period = DASHManifest.Period(start: periodStart, keyID: scheme == nil ? [] : input.bytes(16))
            for index in 0..<input.int(in: 0...3) { period.representations.append(representation(&input, index)) }
            manifest.periods.append(period)
        }
        let text = manifest.render()
        let parsed: ParsedDASHManifest
        do {
            parsed = try ParsedDASHManifest(text, structure: "rendered.mpd")
        } catch {
            preconditionFailure("the writer's manifest does not read back: \(error)\n\(text)")
        }
        precondition(parsed.periods.count == manifest.periods.count, "periods \(parsed.periods.count)")
        precondition(milliseconds(parsed.duration) == milliseconds(max(manifest.duration, 0)), "duration")
        for (number, (read, written)) in zip(parsed.periods, manifest.periods).enumerated() {
            let several = manifest.periods.count > 1
            precondition(milliseconds(read.start) == milliseconds(several ? written.start : 0), "Period start")
            if several {
                let end = number + 1 < manifest.periods.count ? manifest.periods[number + 1].start : manifest.duration
                precondition(read.duration.map(milliseconds) == milliseconds(max(end - written.start, 0)), "duration")
            } else {
                precondition(read.duration == nil, "a single Period has no duration")
            }
            check(read.adaptationSets, written, manifest)
        }
    }

    /// A representation drawn from the input, numbered `index` in its Period.
    private static func representation(_ input: inout FuzzBytes, _ index: Int) -> DASHManifest.Representation {
        let video = input.bool()
        let hasSize = input.bool()
        var segments: [(start: UInt64, duration: UInt64)] = []
        var start = input.integer(4)
        for _ in 0..<input.int(in: 0...40) {
            let duration = input.int(in: 0...3) == 0 ? input.integer(3) : 180_000
            // Mostly contiguous, as the packager's are; sometimes a gap or an overlap.
            if input.int(in: 0...7) == 0 { start = input.integer(4) }
            segments.append((start, duration))
            start += duration
        }
        var representation = DASHManifest.Representation(
            id: input.bool() ? "\(video ? "video" : "audio")-\(index)" : input.string(from: alphabet, limit: 12),
            contentType: video ? "video" : "audio", codecs: input.string(from: codecAlphabet, limit: 16),
            bandwidth: Int(input.integer(4)), width: hasSize ? Int(input.integer(2)) : nil,
            height: hasSize && input.bool() ? Int(input.integer(2)) : nil,
            frameRate: input.bool() ? Double(input.integer(3)) / 1001 : nil,
            sampleRate: input.bool() ? Int(input.integer(3)) : nil,
            channels: input.bool() ? Int(input.byte()) : nil,
            language: input.bool() ? input.string(from: alphabet, limit: 6) : nil,
            timescale: UInt32(max(1, input.integer(4))), presentationTimeOffset: input.integer(5),
            initialization: input.string(from: alphabet, limit: 16), media: input.string(from: alphabet, limit: 16),
            segments: segments)
        if input.bool() { representation.startNumber = input.int(in: 0...500) }
        return representation
    }

    /// The adaptation sets read back from a Period are the Period `written` wrote.
    private static func check(
        _ sets: [ParsedDASHManifest.AdaptationSet], _ written: DASHManifest.Period, _ manifest: DASHManifest
    ) {
        precondition(sets.count == written.representations.count, "\(sets.count) adaptation sets")
        for (set, rep) in zip(sets, written.representations) {
            precondition(set.contentType == rep.contentType && set.mimeType == rep.contentType + "/mp4")
            precondition(set.language == rep.language, "lang \(String(describing: set.language))")
            precondition(set.scheme == manifest.scheme && set.clearKey == (manifest.scheme != nil))
            precondition(set.keyID == (manifest.scheme == nil ? nil : written.keyID), "default_KID")
            precondition(set.licenseURL == (manifest.scheme == nil ? nil : manifest.licenseURL), "Laurl")
            precondition(set.representations.count == 1)
            let read = set.representations[0]
            let sized = rep.width != nil && rep.height != nil
            precondition(read.id == rep.id && read.codecs == rep.codecs && read.bandwidth == rep.bandwidth)
            precondition(read.width == (sized ? rep.width : nil) && read.height == (sized ? rep.height : nil))
            precondition(read.frameRate.map(milliseconds) == rep.frameRate.map(milliseconds), "frameRate")
            precondition(read.sampleRate == rep.sampleRate && read.channels == rep.channels)
            precondition(read.timescale == rep.timescale)
            precondition(read.presentationTimeOffset == rep.presentationTimeOffset)
            precondition(read.initialization == rep.initialization && read.media == rep.media)
            precondition(read.startNumber == rep.startNumber, "startNumber")
            precondition(
                read.segments.count == rep.segments.count
                    && zip(read.segments, rep.segments).allSatisfy {
                        $0.start == $1.start && $0.duration == $1.duration
                    },
                "the timeline reads back as other segments")
        }
    }

    /// Seconds as the writer prints them, to 3 decimals (with the writer's C format, not Foundation's).
    static func milliseconds(_ seconds: Double) -> String { String(cFormat: "%.3f", seconds) }
}
