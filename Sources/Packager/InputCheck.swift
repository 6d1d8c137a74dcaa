import FoundationEssentials
import Glibc
import MediaCore
import MediaFormats
import SystemSupport

/// The checks an input gets before and while FFmpeg opens it, each turning a failure into a specific
/// `PackagingError` that says what is wrong with the file.
enum InputCheck {
    /// Checks that `path` names a readable, non-empty file of media rather than text; an HLS playlist is
    /// refused too, since packaging wants the original media (see `InputFile.problem(at:)`).
    static func preflight(_ path: String) throws(PackagingError) {
        switch InputFile.problem(at: path) {
        case .unreadable(let reason) where reason == "is a directory":
            throw PackagingError(.inputMissing, "input \(path) is a directory, not a media file")
        case .unreadable(let reason):
            throw PackagingError(.inputMissing, "cannot open input \(path): \(reason)")
        case .empty:
            throw PackagingError(.inputEmpty, "input \(path) is empty (0 bytes)")
        case .text:
            throw PackagingError(.inputNotMedia, "input \(path) is text, not media")
        case nil:
            break
        }
        // A regular file only: reading a FIFO would take its first bytes from the demuxer, and opening one
        // would wait for its writer. A playlist that arrives that way is refused once FFmpeg has read it.
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return }
        if let head = ReadOnlyFile.head(of: path, count: 16) {
            if InputFile.isPlaylist(head) {
                throw PackagingError(
                    .inputNotMedia, "input \(path) is an HLS playlist, not a media file: package the original media")
            }
        }
    }

    /// Refuses a transport stream whose PMT already signals SAMPLE-AES (stream types 0xDB, 0xCF, 0xC1,
    /// 0xC2): such input would be encrypted twice.
    static func refuseSampleAESTransportStream(_ path: String) throws(PackagingError) {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
            let head = ReadOnlyFile.head(of: path, count: 1 << 21)
        else { return }
        guard
            let start = (0..<min(188, head.count)).first(where: { offset in
                stride(from: offset, to: min(head.count, offset + 188 * 4), by: 188).allSatisfy { head[$0] == 0x47 }
            })
        else { return }
        let whole = (head.count - start) / 188 * 188
        var reader = TransportStreamReader(name: path)
        _ = try? head[start..<(start + whole)].withUnsafeBytes { try reader.read($0) }
        for stream in reader.programMap?.streams ?? [] {
            if let (codec, encrypted) = ElementaryCodec.from(streamType: stream.streamType), encrypted {
                throw PackagingError(
                    .encryptedInput,
                    "input \(path) is already SAMPLE-AES encrypted (\(codec.rawValue) with stream type 0x"
                        + "\(String(stream.streamType, radix: 16, uppercase: true)) on PID \(stream.pid)): package "
                        + "the clear source instead, or check this output with guard-play verify")
            }
        }
    }

    /// The packager's view of one FFmpeg stream.
    static func describe(_ info: StreamInfo) -> InputStreamDescription {
        let media: InputStreamDescription.Media =
            switch info.mediaType {
            case .video: .video
            case .audio: .audio
            default: .other(info.mediaType.rawValue)
            }
        return InputStreamDescription(
            index: info.index, media: media, codecName: info.codecName, codecTag: info.codecTag,
            isEncrypted: info.isEncrypted, isAttachedPicture: info.isAttachedPicture, extradata: info.extradata,
            language: info.language, title: info.title, width: info.width, height: info.height,
            frameRate: info.frameRate.doubleValue, sampleRate: info.sampleRate, channelCount: info.channelCount)
    }

    /// Turns a failure from FFmpeg, a parser or a producer into a `PackagingError` about the input.
    static func classify(_ error: any Error, path: String) -> PackagingError {
        switch error {
        case let error as PackagingError:
            return error
        case let error as MediaError:
            switch error.kind {
            case .notFound: return PackagingError(.inputMissing, "cannot open input \(path): \(error.message)")
            case .invalidData:
                return PackagingError(
                    .inputUnrecognised, "input \(path) is not in a media format FFmpeg recognises (\(error.message))")
            case .unsupported: return PackagingError(.unsupportedCodec, "input \(path): \(error)")
            case .truncated:
                return PackagingError(.inputCorrupt, "input \(path) is truncated or damaged (\(error.message))")
            case .pictureTooLarge:
                return PackagingError(
                    .unsupportedCodec, "input \(path): \(error): pass --max-pixels to raise the limit if you trust it")
            case .undecodablePicture:
                return PackagingError(.unsupportedCodec, "input \(path): \(error)")
            case .io, .other: return PackagingError(.inputCorrupt, "input \(path) cannot be read: \(error)")
            }
        case let error as FormatError where error.kind == .unsupported:
            return PackagingError(.unsupportedCodec, "input \(path) uses what GuardPlay does not package: \(error)")
        case let error as FormatError:
            return PackagingError(.inputCorrupt, "input \(path) is corrupt: \(error)")
        default:
            return PackagingError(.inputCorrupt, "input \(path) cannot be read: \(error)")
        }
    }
}
