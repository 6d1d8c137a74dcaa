/// How a CMAF track is encrypted: the scheme and what `tenc` carries.
public struct TrackEncryption: Equatable, Sendable {
    public var scheme: CENCScheme
    public var keyID: [UInt8]
    /// The 16-byte constant IV (`cbcs`), or nil with per-sample IVs (`cenc`).
    public var constantIV: [UInt8]?
    /// The `cbcs` pattern: blocks encrypted, then blocks skipped (1:9 for video, 0:0 for audio).
    public var cryptBlocks: Int
    public var skipBlocks: Int

    /// The encryption of a track under `keyID`, with `scheme`'s IV and pattern.
    public init(scheme: CENCScheme, keyID: [UInt8], constantIV: [UInt8]?, cryptBlocks: Int, skipBlocks: Int) {
        self.scheme = scheme
        self.keyID = keyID
        self.constantIV = constantIV
        self.cryptBlocks = cryptBlocks
        self.skipBlocks = skipBlocks
    }
}

/// One CMAF track as its init segment describes it.
public struct FragmentedTrack: Equatable, Sendable {
    /// What the sample entry describes.
    public enum Media: Equatable, Sendable {
        /// H.264 with its avcC record.
        case h264(width: Int, height: Int, configuration: [UInt8])
        /// HEVC with its hvcC record (sample entry `hvc1`: parameter sets out of band).
        case hevc(width: Int, height: Int, configuration: [UInt8])
        /// AAC with its AudioSpecificConfig.
        case aac(sampleRate: Int, channels: Int, configuration: [UInt8])
        /// AC-3 (`ac-3` with `dac3`) or E-AC-3 (`ec-3` with `dec3`), ETSI TS 102 366 Annex F: `format` is
        /// the sample entry's type, `specific` the payload of its specific box.
        case dolby(format: DolbyFormat, sampleRate: Int, specific: [UInt8])
    }

    /// The Dolby audio sample entries.
    public enum DolbyFormat: String, Equatable, Sendable {
        case ac3 = "ac-3"
        case eac3 = "ec-3"

        /// The specific box the sample entry carries.
        var specificBox: String { self == .ac3 ? "dac3" : "dec3" }
    }

    public var media: Media
    /// Ticks per second of every time in the track's segments.
    public var timescale: UInt32
    /// The ISO 639-2 language, `und` when unknown.
    public var language: String = "und"
    /// Encryption, or nil for clear samples.
    public var encryption: TrackEncryption?
    /// The track's ID (one track per CMAF file, so always 1 here).
    var trackID: UInt32 = 1

    /// A track of `media` whose times count `timescale` ticks per second.
    public init(
        media: Media, timescale: UInt32, language: String = "und", encryption: TrackEncryption? = nil,
        trackID: UInt32 = 1
    ) {
        self.media = media
        self.timescale = timescale
        self.language = language
        self.encryption = encryption
        self.trackID = trackID
    }

    public var isVideo: Bool {
        switch media {
        case .h264, .hevc: true
        case .aac, .dolby: false
        }
    }
}

/// One sample of a fragment: its size, timing and encryption record.
public struct FragmentSample: Equatable, Sendable {
    public var size: Int
    public var duration: UInt32
    /// Presentation minus decoding time, in the track's timescale (never negative here).
    public var compositionOffset: UInt32 = 0
    public var isSync: Bool
    /// The per-sample IV (`cenc`), empty with a constant IV.
    public var iv: [UInt8] = []
    /// The subsamples, empty for a whole-sample (audio) record.
    public var subsamples: [Subsample] = []

    /// A sample of `size` bytes lasting `duration` ticks.
    public init(
        size: Int, duration: UInt32, compositionOffset: UInt32 = 0, isSync: Bool, iv: [UInt8] = [],
        subsamples: [Subsample] = []
    ) {
        self.size = size
        self.duration = duration
        self.compositionOffset = compositionOffset
        self.isSync = isSync
        self.iv = iv
        self.subsamples = subsamples
    }
}

/// Writes CMAF (ISO/IEC 23000-19) init segments and media segments of one `moof` and one `mdat`, with
/// the Common Encryption boxes (ISO/IEC 23001-7): `encv`/`enca` → `sinf` (`frma`, `schm`, `schi/tenc`)
/// in the init segment, and `senc` + `saiz` + `saio` in every `traf`. Pure bytes: the caller appends
/// the samples' bytes after the returned header.
public enum FragmentedMP4Writer {
    /// The init segment of `track`: `ftyp` and `moov` (with `mvex`, no samples).
    public static func initSegment(_ track: FragmentedTrack) -> [UInt8] {
        var box = BoxWriter()
        box.box("ftyp") { ftyp in
            ftyp.fourCC("iso6")
            ftyp.u32(0)
            for brand in ["iso6", "cmfc", "mp41", "dash"] { ftyp.fourCC(brand) }
        }
        box.box("moov") { moov in
            moov.box("mvhd", version: 0, flags: 0) { mvhd in
                mvhd.zeros(8)  // creation and modification times
                mvhd.u32(1_000)
                mvhd.u32(0)  // duration: fragmented
                mvhd.u32(0x0001_0000)  // rate 1.0
                mvhd.u16(0x0100)  // volume 1.0
                mvhd.zeros(10)
                writeMatrix(&mvhd)
                mvhd.zeros(24)
                mvhd.u32(track.trackID + 1)  // next_track_ID
            }
            moov.box("trak") { trak in
                trak.box("tkhd", version: 0, flags: 3) { tkhd in
                    tkhd.zeros(8)
                    tkhd.u32(track.trackID)
                    tkhd.u32(0)
                    tkhd.u32(0)  // duration
                    tkhd.zeros(8)
                    tkhd.u16(0)  // layer
                    tkhd.u16(0)  // alternate_group
                    tkhd.u16(track.isVideo ? 0 : 0x0100)
                    tkhd.u16(0)
                    writeMatrix(&tkhd)
                    switch track.media {
                    case .h264(let width, let height, _), .hevc(let width, let height, _):
                        tkhd.u32(UInt32(width) << 16)
                        tkhd.u32(UInt32(height) << 16)
                    case .aac, .dolby:
                        tkhd.zeros(8)
                    }
                }
                trak.box("mdia") { mdia in
                    mdia.box("mdhd", version: 0, flags: 0) { mdhd in
                        mdhd.zeros(8)
                        mdhd.u32(track.timescale)
                        mdhd.u32(0)
                        mdhd.u16(packedLanguage(track.language))
                        mdhd.u16(0)
                    }
                    mdia.box("hdlr", version: 0, flags: 0) { hdlr in
                        hdlr.u32(0)
                        hdlr.fourCC(track.isVideo ? "vide" : "soun")
                        hdlr.zeros(12)
                        hdlr.append(Array((track.isVideo ? "VideoHandler" : "SoundHandler").utf8) + [0])
                    }
                    mdia.box("minf") { minf in
                        if track.isVideo {
                            minf.box("vmhd", version: 0, flags: 1) { $0.zeros(8) }
                        } else {
                            minf.box("smhd", version: 0, flags: 0) { $0.zeros(4) }
                        }
                        minf.box("dinf") { dinf in
                            dinf.box("dref", version: 0, flags: 0) { dref in
                                dref.u32(1)
                                dref.box("url ", version: 0, flags: 1) { _ in }
                            }
                        }
                        minf.box("stbl") { stbl in
                            stbl.box("stsd", version: 0, flags: 0) { stsd in
                                stsd.u32(1)
                                writeSampleEntry(track, &stsd)
                            }
                            for empty in ["stts", "stsc", "stco"] {
                                stbl.box(empty, version: 0, flags: 0) { $0.u32(0) }
                            }
                            stbl.box("stsz", version: 0, flags: 0) { $0.zeros(8) }
                        }
                    }
                }
            }
            moov.box("mvex") { mvex in
                mvex.box("trex", version: 0, flags: 0) { trex in
                    trex.u32(track.trackID)
                    trex.u32(1)  // default_sample_description_index
                    trex.zeros(12)
                }
            }
        }
        return box.bytes
    }

    /// The `moof` and the `mdat` header of fragment `sequenceNumber` (from 1) whose samples start at
    /// decoding time `baseDecodeTime`; the `mdat` body is the samples' bytes, in order, appended by the
    /// caller. `saio` points at the first sample's record in `senc`, `trun`'s data offset at the first
    /// sample, both from the start of the `moof`.
    public static func fragmentHeader(
        _ track: FragmentedTrack, sequenceNumber: UInt32, baseDecodeTime: UInt64, samples: [FragmentSample]
    ) -> [UInt8] {
        var box = BoxWriter(capacity: 64 + samples.count * 32)
        var dataOffsetField = 0
        var sencRecordsStart = 0
        var saioField = 0
        let hasSubsamples = samples.contains { !$0.subsamples.isEmpty }
        box.box("moof") { moof in
            moof.box("mfhd", version: 0, flags: 0) { $0.u32(sequenceNumber) }
            moof.box("traf") { traf in
                // default-base-is-moof; audio samples share their flags.
                traf.box("tfhd", version: 0, flags: track.isVideo ? 0x02_0000 : 0x02_0020) { tfhd in
                    tfhd.u32(track.trackID)
                    if !track.isVideo { tfhd.u32(0x0200_0000) }  // sample_depends_on 2: every frame a sync sample
                }
                traf.box("tfdt", version: 1, flags: 0) { $0.u64(baseDecodeTime) }
                let trunFlags: UInt32 = track.isVideo ? 0x000F01 : 0x000301
                traf.box("trun", version: 0, flags: trunFlags) { trun in
                    trun.u32(UInt32(samples.count))
                    dataOffsetField = trun.count
                    trun.u32(0)
                    for sample in samples {
                        trun.u32(sample.duration)
                        trun.u32(UInt32(sample.size))
                        if track.isVideo {
                            trun.u32(sample.isSync ? 0x0200_0000 : 0x0101_0000)
                            trun.u32(sample.compositionOffset)
                        }
                    }
                }
                guard track.encryption != nil else { return }
                traf.box("senc", version: 0, flags: hasSubsamples ? 2 : 0) { senc in
                    senc.u32(UInt32(samples.count))
                    sencRecordsStart = senc.count
                    for sample in samples {
                        senc.append(sample.iv)
                        if hasSubsamples {
                            senc.u16(UInt16(sample.subsamples.count))
                            for subsample in sample.subsamples {
                                senc.u16(UInt16(subsample.clear))
                                senc.u32(UInt32(subsample.protected))
                            }
                        }
                    }
                }
                let sizes = samples.map { $0.iv.count + (hasSubsamples ? 2 + 6 * $0.subsamples.count : 0) }
                traf.box("saiz", version: 0, flags: 0) { saiz in
                    let uniform = sizes.allSatisfy { $0 == sizes.first } && (sizes.first ?? 0) > 0
                    saiz.u8(uniform ? UInt8(sizes[0]) : 0)
                    saiz.u32(UInt32(samples.count))
                    if !uniform { for size in sizes { saiz.u8(UInt8(size)) } }
                }
                traf.box("saio", version: 0, flags: 0) { saio in
                    saio.u32(1)
                    saioField = saio.count
                    saio.u32(0)
                }
            }
        }
        let moofSize = box.count
        box.patch(UInt32(moofSize + 8), at: dataOffsetField)
        if saioField > 0 { box.patch(UInt32(sencRecordsStart), at: saioField) }
        box.u32(UInt32(8 + samples.reduce(0) { $0 + $1.size }))
        box.fourCC("mdat")
        return box.bytes
    }

    /// The avcC record (ISO/IEC 14496-15 §5.3.3.1) of parameter sets with 4-byte NAL lengths.
    public static func avcConfiguration(sps: [[UInt8]], pps: [[UInt8]], parsed: H264SequenceParameterSet) -> [UInt8] {
        var bytes: [UInt8] = [1, sps[0][1], sps[0][2], sps[0][3], 0xFF, 0xE0 | UInt8(sps.count)]
        for set in sps {
            bytes.appendBigEndian(UInt16(set.count))
            bytes += set
        }
        bytes.append(UInt8(pps.count))
        for set in pps {
            bytes.appendBigEndian(UInt16(set.count))
            bytes += set
        }
        if [100, 110, 122, 144].contains(parsed.profile) {
            bytes += [
                0xFC | UInt8(parsed.chromaFormat), 0xF8 | UInt8(parsed.bitDepthLuma - 8),
                0xF8 | UInt8(parsed.bitDepthChroma - 8), 0,
            ]
        }
        return bytes
    }

    private static func writeMatrix(_ box: inout BoxWriter) {
        for value: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { box.u32(value) }
    }

    /// ISO 639-2/T packed in three 5-bit letters, as `mdhd` stores it; `und` for anything else.
    static func packedLanguage(_ code: String) -> UInt16 {
        let letters = Array(code.utf8)
        guard letters.count == 3, letters.allSatisfy({ (0x61...0x7A).contains($0) }) else {
            return packedLanguage("und")
        }
        return letters.reduce(UInt16(0)) { $0 << 5 | UInt16($1 - 0x60) }
    }

    private static func writeSampleEntry(_ track: FragmentedTrack, _ box: inout BoxWriter) {
        let encrypted = track.encryption != nil
        switch track.media {
        case .h264(let width, let height, let configuration), .hevc(let width, let height, let configuration):
            let isHEVC = if case .hevc = track.media { true } else { false }
            let format = isHEVC ? "hvc1" : "avc1"
            box.begin(encrypted ? "encv" : format)
            box.zeros(6)
            box.u16(1)  // data_reference_index
            box.zeros(16)
            box.u16(UInt16(clamping: width))
            box.u16(UInt16(clamping: height))
            box.u32(0x0048_0000)
            box.u32(0x0048_0000)
            box.u32(0)
            box.u16(1)  // frame_count
            box.zeros(32)  // compressorname
            box.u16(0x0018)
            box.u16(0xFFFF)
            box.box(isHEVC ? "hvcC" : "avcC") { $0.append(configuration) }
            writeProtection(track, original: format, &box)
            box.end()
        case .aac(let sampleRate, let channels, let configuration):
            box.begin(encrypted ? "enca" : "mp4a")
            box.zeros(6)
            box.u16(1)
            box.zeros(8)
            box.u16(UInt16(clamping: channels))
            box.u16(16)
            box.zeros(4)
            box.u32(UInt32(min(sampleRate, 65_535)) << 16)
            box.box("esds", version: 0, flags: 0) { esds in
                esds.append(elementaryStreamDescriptor(configuration))
            }
            writeProtection(track, original: "mp4a", &box)
            box.end()
        case .dolby(let format, let sampleRate, let specific):
            // The channel count and sample size are fixed (§F.3): the specific box describes the audio.
            box.begin(encrypted ? "enca" : format.rawValue)
            box.zeros(6)
            box.u16(1)
            box.zeros(8)
            box.u16(2)
            box.u16(16)
            box.zeros(4)
            box.u32(UInt32(min(sampleRate, 65_535)) << 16)
            box.box(format.specificBox) { $0.append(specific) }
            writeProtection(track, original: format.rawValue, &box)
            box.end()
        }
    }

    /// ES_Descriptor → DecoderConfigDescriptor (MPEG-4 audio) → DecoderSpecificInfo, SLConfigDescriptor
    /// (ISO/IEC 14496-1 §7.2.6).
    static func elementaryStreamDescriptor(_ audioSpecificConfig: [UInt8]) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [tag, UInt8(payload.count)] + payload
        }
        let specific = descriptor(5, audioSpecificConfig)
        let decoderConfig = descriptor(4, [0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] + specific)
        return descriptor(3, [0, 1, 0] + decoderConfig + descriptor(6, [2]))
    }

    private static func writeProtection(_ track: FragmentedTrack, original: String, _ box: inout BoxWriter) {
        guard let encryption = track.encryption else { return }
        box.box("sinf") { sinf in
            sinf.box("frma") { $0.fourCC(original) }
            sinf.box("schm", version: 0, flags: 0) { schm in
                schm.fourCC(encryption.scheme.rawValue)
                schm.u32(0x0001_0000)
            }
            sinf.box("schi") { schi in
                let isPattern = encryption.scheme == .cbcs
                schi.box("tenc", version: isPattern ? 1 : 0, flags: 0) { tenc in
                    tenc.u8(0)
                    tenc.u8(isPattern ? UInt8(encryption.cryptBlocks << 4 | encryption.skipBlocks) : 0)
                    tenc.u8(1)  // default_isProtected
                    tenc.u8(UInt8(encryption.scheme.perSampleIVSize))
                    tenc.append(encryption.keyID)
                    if let iv = encryption.constantIV, encryption.scheme.perSampleIVSize == 0 {
                        tenc.u8(UInt8(iv.count))
                        tenc.append(iv)
                    }
                }
            }
        }
    }
}
