import Foundation
import MediaFormats

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

    /// Characters the writer's escaped strings are drawn from: XML's specials, spaces, non-ASCII.
    static let alphabet = Array("aZ09_-./:?=$%&<>\"' \u{e9}\u{1F600}")
    /// Characters of an RFC 6381 codec string, which the writer puts in unescaped.
    static let codecAlphabet = Array("avc1.64001Fmp4a.40.2hvc1.L93.B0ec-3")

    /// A manifest from the input, written, read back: every field the writer writes comes back, with
    /// the seconds it prints to 3 decimals rounded as it rounds them.
    static func roundTrip(_ data: UnsafeRawBufferPointer) {
        var input = FuzzBytes(data)
        var manifest = DASHManifest(duration: Double(input.integer(4)) / 1000 + Double(input.int(in: 0...999)) / 1e6)
        if input.bool() {
            manifest.scheme = input.pick(["cbcs", "cenc"])
            manifest.keyID = input.bytes(16)
            if input.bool() { manifest.licenseURL = input.string(from: alphabet, limit: 24) }
        }
        for index in 0..<input.int(in: 0...3) {
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
            manifest.representations.append(
                DASHManifest.Representation(
                    id: input.bool()
                        ? "\(video ? "video" : "audio")-\(index)" : input.string(from: alphabet, limit: 12),
                    contentType: video ? "video" : "audio", codecs: input.string(from: codecAlphabet, limit: 16),
                    bandwidth: Int(input.integer(4)), width: hasSize ? Int(input.integer(2)) : nil,
                    height: hasSize && input.bool() ? Int(input.integer(2)) : nil,
                    frameRate: input.bool() ? Double(input.integer(3)) / 1001 : nil,
                    sampleRate: input.bool() ? Int(input.integer(3)) : nil,
                    channels: input.bool() ? Int(input.byte()) : nil,
                    language: input.bool() ? input.string(from: alphabet, limit: 6) : nil,
                    timescale: UInt32(max(1, input.integer(4))), presentationTimeOffset: input.integer(5),
                    initialization: input.string(from: alphabet, limit: 16),
                    media: input.string(from: alphabet, limit: 16),
                    segments: segments))
        }
        let text = manifest.render()
        let parsed: ParsedDASHManifest
        do {
            parsed = try ParsedDASHManifest(text, structure: "rendered.mpd")
        } catch {
            preconditionFailure("the writer's manifest does not read back: \(error)\n\(text)")
        }
        // One Period until the writer writes more (key rotation).
        precondition(parsed.periods.count == 1 && parsed.periods[0].start == 0, "periods \(parsed.periods.count)")
        precondition(milliseconds(parsed.duration) == milliseconds(max(manifest.duration, 0)), "duration")
        let sets = parsed.periods[0].adaptationSets
        precondition(sets.count == manifest.representations.count, "\(sets.count) adaptation sets")
        for (set, written) in zip(sets, manifest.representations) {
            precondition(set.contentType == written.contentType && set.mimeType == written.contentType + "/mp4")
            precondition(set.language == written.language, "lang \(String(describing: set.language))")
            precondition(set.scheme == manifest.scheme && set.clearKey == (manifest.scheme != nil))
            precondition(set.keyID == (manifest.scheme == nil ? nil : manifest.keyID), "default_KID")
            precondition(set.licenseURL == (manifest.scheme == nil ? nil : manifest.licenseURL), "Laurl")
            precondition(set.representations.count == 1)
            let read = set.representations[0]
            let sized = written.width != nil && written.height != nil
            precondition(read.id == written.id && read.codecs == written.codecs && read.bandwidth == written.bandwidth)
            precondition(read.width == (sized ? written.width : nil) && read.height == (sized ? written.height : nil))
            precondition(read.frameRate.map(milliseconds) == written.frameRate.map(milliseconds), "frameRate")
            precondition(read.sampleRate == written.sampleRate && read.channels == written.channels)
            precondition(read.timescale == written.timescale)
            precondition(read.presentationTimeOffset == written.presentationTimeOffset)
            precondition(read.initialization == written.initialization && read.media == written.media)
            precondition(read.startNumber == 0)
            precondition(
                read.segments.map { [$0.start, $0.duration] } == written.segments.map { [$0.start, $0.duration] },
                "the timeline reads back as other segments")
        }
    }

    /// Seconds as the writer prints them, to 3 decimals.
    static func milliseconds(_ seconds: Double) -> String { String(format: "%.3f", seconds) }
}
