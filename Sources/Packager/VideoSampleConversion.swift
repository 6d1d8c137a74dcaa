import MediaCore
import MediaFormats

/// The CMAF sample conversion of the video stream, H.264 or HEVC as planned: length-prefixed samples
/// with each NAL unit's clear bytes, and the sample entry the first samples' parameter sets make. The
/// packager and the verifier's expected samples run the same conversion.
struct VideoSampleConversion: CMAFSampleBuilding {
    // One of the two is set; optional chaining mutates the builder in place.
    private var h264: H264SampleBuilder?
    private var hevc: HEVCSampleBuilder?

    /// A conversion for video of `codec`.
    init(codec: ElementaryCodec) {
        if codec == .hevc { hevc = HEVCSampleBuilder() } else { h264 = H264SampleBuilder() }
    }

    /// Appends the sample of `bytes` (Annex-B, NAL units at `nalUnits`) to `output`; returns each kept
    /// NAL unit's stored size and clear bytes.
    mutating func append(bytes: [UInt8], nalUnits: [Range<Int>], to output: ByteBuffer) throws(FormatError)
        -> [(size: Int, clear: Int)]
    {
        try bytes.withBytes { raw throws(FormatError) in try append(raw, nalUnits: nalUnits, to: output) }
    }

    /// Appends the sample of `unit`, Annex-B or the demuxer's packet, to `output`; returns each kept NAL
    /// unit's stored size and clear bytes.
    mutating func append(_ unit: AccessUnit, to output: ByteBuffer) throws(FormatError) -> [(size: Int, clear: Int)] {
        guard let packet = unit.packet, let sample = unit.sample else {
            return try append(bytes: unit.bytes, nalUnits: unit.nalUnits, to: output)
        }
        return try packet.withUnsafeBytes { raw in
            Result { () throws(FormatError) in try append(raw, units: sample, to: output) }
        }.get()
    }

    /// Appends the sample of the NAL units at `nalUnits` of `bytes`, with `inserted` parameter sets before
    /// `nalUnits[position]`, to `output` with the planned codec's builder; the other forms and
    /// `sample(bytes:nalUnits:)` come with `CMAFSampleBuilding`.
    mutating func append(
        _ bytes: UnsafeRawBufferPointer, nalUnits: [Range<Int>], inserting inserted: [[UInt8]], before position: Int,
        to output: ByteBuffer
    ) throws(FormatError) -> [(size: Int, clear: Int)] {
        if hevc != nil {
            return try hevc!.append(bytes, nalUnits: nalUnits, inserting: inserted, before: position, to: output)
        }
        return try h264!.append(bytes, nalUnits: nalUnits, inserting: inserted, before: position, to: output)
    }

    /// The sample entry's media, from the parameter sets of the first sample (call after it).
    func media(width: Int, height: Int) throws(FormatError) -> FragmentedTrack.Media {
        if let hevc {
            return .hevc(width: width, height: height, configuration: try hevc.configuration().serialized())
        }
        let builder = h264!
        let sps = try H264SequenceParameterSet(nal: builder.sequenceParameterSets[0])
        let configuration = FragmentedMP4Writer.avcConfiguration(
            sps: builder.sequenceParameterSets, pps: builder.pictureParameterSets, parsed: sps)
        return .h264(width: width, height: height, configuration: configuration)
    }
}
