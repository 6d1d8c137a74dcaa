import MediaFormats

/// What the packager needs to know about one input stream, copied from the demuxer so the planning
/// rules can be tested without a file.
struct InputStreamDescription: Sendable, Equatable {
    /// Video, audio, or something the packager does not carry (subtitles, data).
    enum Media: Sendable, Equatable {
        case video
        case audio
        case other(String)
    }

    var index: Int
    var media: Media
    /// FFmpeg's codec name: `h264`, `hevc`, `aac`, `ac3`, `eac3`, `mp3`, `png`…
    var codecName: String
    /// The container's codec tag (`avc1`, `encv`…), or empty.
    var codecTag: String
    var isEncrypted: Bool
    var isAttachedPicture: Bool
    var extradata: [UInt8]
    var language: String?
    var title: String?
    var width = 0
    var height = 0
    /// Frames per second, or 0 when unknown.
    var frameRate = 0.0
    var sampleRate = 0
    var channelCount = 0
}

/// How one planned stream gets from the input to the output.
enum StreamHandling: Sendable, Equatable {
    /// H.264 copied and converted to Annex-B.
    case copyH264
    /// HEVC copied and converted to Annex-B (fMP4 only).
    case copyHEVC
    /// AAC copied, with ADTS headers made from this AudioSpecificConfig.
    case copyAAC(AudioSpecificConfig)
    /// AAC copied from packets that already carry ADTS headers.
    case copyADTS
    /// AC-3 or E-AC-3 copied as is.
    case copyDolby
    /// Decoded and encoded again as AAC-LC.
    case transcodeToAAC
    /// A still image encoded as a short H.264 video.
    case encodeStill
}

/// One input stream the packager carries, and how.
struct PlannedStream: Sendable, Equatable {
    var source: InputStreamDescription
    var codec: ElementaryCodec
    var handling: StreamHandling
}

/// Which input streams become which output streams, or the refusal that explains why not.
///
/// Rules: the first H.264 or HEVC video stream (cover art ignored; HEVC goes to fMP4 only, which
/// `PackagingJob` decides); other video codecs refused, except a still image, which becomes a short
/// H.264 video; every audio stream, AAC/AC-3/E-AC-3 copied and
/// anything else transcoded to AAC-LC; subtitles and data ignored with a notice.
struct StreamPlan: Sendable, Equatable {
    var video: PlannedStream?
    var audio: [PlannedStream]
    var notices: [String]

    /// Image formats FFmpeg reads as a single picture.
    static let stillImageCodecs: Set<String> = ["png", "mjpeg", "bmp", "webp", "tiff", "jpeg2000", "qoi", "pgm", "ppm"]

    /// Plans `streams` of an input whose demuxer is `formatName`.
    static func make(streams: [InputStreamDescription], formatName: String) throws(PackagingError) -> StreamPlan {
        var notices: [String] = []
        if let encrypted = streams.first(where: { $0.isEncrypted }) {
            let tag = encrypted.codecTag.isEmpty ? "" : " ('\(encrypted.codecTag)' sample entry)"
            throw PackagingError(
                .encryptedInput,
                "stream \(encrypted.index) of the input is already encrypted\(tag); GuardPlay packages clear "
                    + "sources only: use the clear mezzanine file, or decrypt it first "
                    + "(ffmpeg -decryption_key KEY -i IN -c copy OUT.mp4)")
        }
        let pictures = streams.filter { $0.media == .video && !$0.isAttachedPicture }
        let audioStreams = streams.filter { $0.media == .audio }
        for stream in streams {
            if case .other(let kind) = stream.media {
                notices.append(
                    "ignoring \(kind) stream \(stream.index) (\(stream.codecName)): HLS TS carries audio and video only"
                )
            }
        }
        var video: PlannedStream? = nil
        if let first = pictures.first {
            let isStill =
                stillImageCodecs.contains(first.codecName)
                && (formatName.hasSuffix("_pipe") || formatName == "image2") && audioStreams.isEmpty
            switch first.codecName {
            case "h264":
                video = PlannedStream(source: first, codec: .h264, handling: .copyH264)
            case _ where isStill:
                if let refusal = StillImageProducer.sizeRefusal(width: first.width, height: first.height) {
                    throw refusal
                }
                video = PlannedStream(source: first, codec: .h264, handling: .encodeStill)
                notices.append(
                    "the input is a still image (\(first.codecName)): encoding it as a short H.264 video, "
                        + "since SAMPLE-AES protects video streams")
            case "hevc":
                video = PlannedStream(source: first, codec: .hevc, handling: .copyHEVC)
            default:
                throw PackagingError(
                    .unsupportedCodec,
                    "the video codec is \(first.codecName); GuardPlay packages H.264 (TS or fMP4) and HEVC (fMP4) "
                        + "video only: re-encode it to H.264 (ffmpeg -i IN -c:v libx264 -c:a copy OUT.mp4)")
            }
            for extra in pictures.dropFirst() {
                notices.append(
                    "ignoring video stream \(extra.index) (\(extra.codecName)): one video stream is packaged")
            }
        }
        var audio: [PlannedStream] = []
        for stream in audioStreams {
            switch stream.codecName {
            case "aac":
                if stream.extradata.isEmpty {
                    audio.append(PlannedStream(source: stream, codec: .aac, handling: .copyADTS))
                    continue
                }
                var problem: String
                do {
                    let config = try AudioSpecificConfig(stream.extradata)
                    if config.adtsIncompatibility == nil {
                        audio.append(PlannedStream(source: stream, codec: .aac, handling: .copyAAC(config)))
                        continue
                    }
                    problem = config.adtsIncompatibility!
                } catch {
                    problem = error.reason
                }
                notices.append(
                    "transcoding AAC stream \(stream.index) to AAC-LC: ADTS cannot carry its configuration (\(problem))"
                )
                audio.append(PlannedStream(source: stream, codec: .aac, handling: .transcodeToAAC))
            case "ac3":
                audio.append(PlannedStream(source: stream, codec: .ac3, handling: .copyDolby))
            case "eac3":
                audio.append(PlannedStream(source: stream, codec: .eac3, handling: .copyDolby))
            default:
                notices.append(
                    "transcoding \(stream.codecName) audio (stream \(stream.index)) to AAC-LC: SAMPLE-AES carries "
                        + "AAC, AC-3 and E-AC-3 only")
                audio.append(PlannedStream(source: stream, codec: .aac, handling: .transcodeToAAC))
            }
        }
        guard video != nil || !audio.isEmpty else {
            throw PackagingError(.inputNoStreams, "the input has no audio or video stream to package")
        }
        return StreamPlan(video: video, audio: audio, notices: notices)
    }

    /// The planned streams, video first: the order of stream slots everywhere in the packager.
    var streams: [PlannedStream] { (video.map { [$0] } ?? []) + audio }
}
