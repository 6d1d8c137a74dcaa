import MediaCore
import MediaFormats

/// One access unit ready for a segment: a video frame in Annex-B, an ADTS frame, or an AC-3/E-AC-3
/// access unit, with 90 kHz timestamps; or, for the fMP4 path (`SourceReader`'s `cmafSamples`), the
/// demuxer's packet itself: a length-prefixed video sample with its NAL units, or a raw AAC frame.
struct AccessUnit {
    /// The clear bytes.
    var bytes: [UInt8]
    /// For video, where each NAL unit's payload lies in `bytes`; empty for audio.
    var nalUnits: [Range<Int>]
    /// Presentation timestamp, 90 kHz.
    var pts: Int64
    /// Decoding timestamp, 90 kHz.
    var dts: Int64
    /// Duration, 90 kHz.
    var duration: Int64
    /// True for an IDR picture (a segment may start here) and for every audio frame.
    var isRandomAccess: Bool
    /// With `--watermark ab`, which variant of the video this unit belongs to; nil otherwise.
    var variant: WatermarkVariant? = nil
    /// The demuxer's packet (shared, not copied) when the unit is carried as it was read; `bytes` and
    /// `nalUnits` are then empty.
    var packet: Packet? = nil
    /// With `packet`, for video: its NAL units and the parameter sets to insert; nil for a raw AAC frame.
    var sample: VideoSampleUnits? = nil

    /// The unit's bytes as carried, about the size of its CMAF sample.
    var size: Int { packet?.size ?? bytes.count }

    /// Presentation end, 90 kHz.
    var end: Int64 { pts + duration }
}

/// Turns a stream's timestamps into the 90 kHz MPEG clock with a fixed offset, filling gaps: a missing
/// DTS follows the previous one, a missing PTS equals the DTS, a DTS that does not increase is moved
/// just past the previous one, and a missing duration repeats the last known one.
struct TimestampMapper {
    /// The offset added to every timestamp, so that early decoding times stay positive.
    static let startOffset: Int64 = 126_000  // 1.4 s, as FFmpeg's muxers start

    private let numerator: Int64
    private let denominator: Int64
    private let offset: Int64
    private var lastDTS: Int64?
    private var lastDuration: Int64
    /// How many timestamps had to be repaired.
    private(set) var repairs = 0

    /// A mapper from `timeBase` (numerator/denominator seconds) with `offset` in 90 kHz and a duration
    /// to use before any is known.
    init(timeBase: (numerator: Int32, denominator: Int32), offset: Int64, defaultDuration: Int64) {
        let valid = timeBase.numerator > 0 && timeBase.denominator > 0
        numerator = valid ? Int64(timeBase.numerator) : 1
        denominator = valid ? Int64(timeBase.denominator) : 90_000
        self.offset = offset
        lastDuration = max(defaultDuration, 1)
    }

    /// `value` in 90 kHz, rounded to nearest; absurd values (beyond about 400 years) are clamped
    /// rather than allowed to overflow.
    func rescale(_ value: Int64) -> Int64 {
        let limit: Int64 = 1 << 50
        let estimate = Double(value) * Double(numerator) * 90_000 / Double(denominator)
        guard abs(estimate) < Double(limit) else { return estimate < 0 ? -limit : limit }
        let scaled = value.multipliedFullWidth(by: numerator * 90_000)
        let (quotient, remainder) = denominator.dividingFullWidth(scaled)
        let twice = remainder.magnitude * 2
        if twice >= UInt64(denominator) { return quotient + (remainder < 0 ? -1 : 1) }
        return quotient
    }

    /// Maps one packet's timestamps (`nil` where the packet has none).
    mutating func map(pts: Int64?, dts: Int64?, duration: Int64) -> (pts: Int64, dts: Int64, duration: Int64) {
        var outDuration = duration > 0 ? rescale(duration) : lastDuration
        if outDuration <= 0 { outDuration = lastDuration }
        var outDTS: Int64
        if let dts {
            outDTS = rescale(dts) + offset
        } else if let pts, lastDTS == nil {
            outDTS = rescale(pts) + offset
        } else {
            outDTS = (lastDTS ?? offset) + lastDuration
            repairs += 1
        }
        if let last = lastDTS, outDTS <= last {
            outDTS = last + 1
            repairs += 1
        }
        var outPTS = pts.map { rescale($0) + offset } ?? outDTS
        if outPTS < outDTS {
            outPTS = outDTS
            repairs += 1
        }
        lastDTS = outDTS
        lastDuration = outDuration
        return (outPTS, outDTS, outDuration)
    }
}
