import MediaFormats

/// The DASH manifest of a CMAF run, `manifest.mpd`: one Period for one key, and under `--key-period`
/// one Period per key period, each naming its key ID and its tracks' init segments of that period.
///
/// A Period starts at one instant for every track, but each track is cut on its own (video at IDR
/// pictures, audio at whole frames on a grid from the video's first picture, within a frame of the
/// video's when the segment duration is a multiple of the GOP), so a track's key period can start a
/// little off the main track's. The Period starts where the main track's key period starts, every track's
/// `presentationTimeOffset` is that instant (the tracks stay in sync), and a track may start or end up to
/// `periodAlignmentTolerance` off it; further apart, no MPD is written and a notice says why.
extension FragmentedPackagingRun {
    /// How far (seconds) a track's key period may start from its Period's start.
    static let periodAlignmentTolerance = 0.1

    /// The MPD text, or nil with the notices saying why there is none: AES-128 output has no DASH
    /// signalling (whole-segment encryption), and rotated tracks may start their key periods too far
    /// apart.
    func dashManifest(outputs: [FragmentedOutput], details: [StreamDetails], duration: Double)
        throws(PackagingError) -> (text: String?, notices: [String])
    {
        guard options.encryption != .aes128, let main = outputs.first else { return (nil, []) }
        let streams = reader.plan.streams
        let ring = keys.ring
        let periodCount =
            outputs.map { $0.segments.isEmpty ? 0 : ring.period(ofSegment: $0.segments.count - 1) + 1 }.max() ?? 0
        var periods: [DASHManifest.Period] = []
        for period in 0..<periodCount {
            // Each track's segments of this key period, and where the first of them starts.
            let parts = outputs.map { output in
                let indices = output.segments.indices.filter { ring.period(ofSegment: $0) == period }
                let start = indices.first.map { Self.presentationSeconds(output, output.segments[$0].decodeTime) }
                return (output: output, indices: indices, start: start)
            }
            guard let start = parts.first(where: { $0.output === main })?.start ?? parts.compactMap({ $0.start }).min()
            else { continue }
            for part in parts {
                guard let trackStart = part.start, abs(trackStart - start) > Self.periodAlignmentTolerance else {
                    continue
                }
                return (
                    nil,
                    [
                        "no manifest.mpd: key period \(period) of \(part.output.name) starts at "
                            + "\(Self.seconds(trackStart)) s, the main track's at \(Self.seconds(start)) s "
                            + "(each track is cut on its own), and a DASH Period starts at one instant for "
                            + "every track; a key period of fewer segments, or a segment duration that is a "
                            + "multiple of the GOP, keeps them together"
                    ]
                )
            }
            var entry = DASHManifest.Period(
                start: periods.isEmpty ? 0 : start, keyID: try scheme == nil ? [] : ring.key(period: period).keyID)
            for part in parts where !part.indices.isEmpty {
                let output = part.output
                let detail = details[output.slot]
                let isVideo = !streams[output.slot].codec.isAudio
                let offset = UInt64(output.ticks(TimestampMapper.startOffset))
                var representation = DASHManifest.Representation(
                    id: output.name, contentType: isVideo ? "video" : "audio", codecs: detail.codecString,
                    bandwidth: Self.rates(output).peak, width: isVideo ? detail.width : nil,
                    height: isVideo ? detail.height : nil,
                    frameRate: isVideo && detail.frameRate > 0 ? detail.frameRate : nil,
                    sampleRate: isVideo ? nil : Int(output.timescale), channels: isVideo ? nil : detail.channels,
                    language: isVideo ? nil : Languages.tag(streams[output.slot].source.language),
                    timescale: output.timescale,
                    presentationTimeOffset: offset + UInt64((entry.start * Double(output.timescale)).rounded()),
                    initialization: output.initURI(period: period), media: output.mediaTemplate,
                    segments: part.indices.map { (output.segments[$0].decodeTime, output.segments[$0].ticks) })
                representation.startNumber = part.indices[0]
                entry.representations.append(representation)
            }
            periods.append(entry)
        }
        let manifest = DASHManifest(
            periods: periods, duration: duration, scheme: scheme?.rawValue, licenseURL: options.licenseURL)
        return (manifest.render(), [])
    }

    /// Where the segment decoding from `decodeTime` (track ticks) starts in the presentation, in seconds:
    /// its decoding time moved on by the track's lead (how far the first sample decodes before the
    /// presentation starts, B-frames' reordering delay), as Period 0 starts at 0 with that lead.
    private static func presentationSeconds(_ output: FragmentedOutput, _ decodeTime: UInt64) -> Double {
        let start = Double(output.ticks(TimestampMapper.startOffset))
        let lead = max(0, start - Double(output.segments.first?.decodeTime ?? 0))
        return (Double(decodeTime) + lead - start) / Double(output.timescale)
    }

    private static func seconds(_ value: Double) -> String { String(cFormat: "%.3f", value) }
}
