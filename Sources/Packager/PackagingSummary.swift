import MediaFormats

/// What the TS and the CMAF runs both derive from what they wrote: measured bit rates, the audio
/// renditions of the master playlist, and the result's stream list.
enum PackagingSummary {
    /// Peak and average bit rates of segments given as bytes and seconds, rounded up.
    static func rates(_ segments: [(bytes: Int, seconds: Double)]) -> (peak: Int, average: Int) {
        var peak = 0.0
        var bits = 0.0
        var seconds = 0.0
        for segment in segments {
            bits += Double(segment.bytes * 8)
            seconds += segment.seconds
            if segment.seconds > 0 { peak = max(peak, Double(segment.bytes * 8) / segment.seconds) }
        }
        return (Int(peak.rounded(.up)), seconds > 0 ? Int((bits / seconds).rounded(.up)) : Int(peak.rounded(.up)))
    }

    /// The `EXT-X-MEDIA` audio group for renditions given as their slot and playlist name, named after
    /// their titles or languages, each name once, the first the default.
    static func audioRenditions(
        _ renditions: [(slot: Int, playlist: String)], streams: [PlannedStream], details: [StreamDetails]
    ) -> [MasterPlaylist.AudioRendition] {
        var usedNames = Set<String>()
        var result: [MasterPlaylist.AudioRendition] = []
        for (number, rendition) in renditions.enumerated() {
            let source = streams[rendition.slot].source
            var name = source.title ?? Languages.name(source.language) ?? "Audio \(number + 1)"
            if usedNames.contains(name) { name += " \(number + 1)" }
            usedNames.insert(name)
            result.append(
                .init(
                    groupID: "audio", name: name, language: Languages.tag(source.language), isDefault: number == 0,
                    channels: details[rendition.slot].channels, uri: rendition.playlist))
        }
        return result
    }

    /// The result's entry for each planned stream: its playlist (by slot) and access units written.
    static func packagedStreams(
        _ streams: [PlannedStream], details: [StreamDetails], playlist: (Int) -> String, accessUnits: (Int) -> Int
    ) -> [PackagedStream] {
        streams.enumerated().map { slot, planned in
            let transcoded: String? =
                switch planned.handling {
                case .transcodeToAAC, .encodeStill: planned.source.codecName
                default: nil
                }
            return PackagedStream(
                kind: planned.codec.isAudio ? "audio" : "video", codec: details[slot].codecString,
                sourceIndex: planned.source.index, playlist: playlist(slot), accessUnits: accessUnits(slot),
                transcodedFrom: transcoded, language: Languages.tag(planned.source.language))
        }
    }
}
