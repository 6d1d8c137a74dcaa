import FoundationEssentials
import Glibc
import MediaCore
import SystemSupport

/// Opens a media file and turns every way it can be bad into a specific `PlayerError`.
enum InputProbe {
    /// Opens `path`, or throws: missing, empty, text, unrecognised bytes, truncated, no streams, or a
    /// local HLS master playlist naming playlists FFmpeg cannot open safely.
    static func open(
        _ path: String, interruption: InputInterruption? = nil, pictureLimit: PictureSizeLimit = .standard
    ) throws(PlayerError) -> InputContext {
        switch InputFile.problem(at: path) {
        case .unreadable(let reason) where reason == String(cString: strerror(ENOENT)):
            throw PlayerError(.inputMissing, "'\(path)': no such file")
        case .unreadable(let reason):
            throw PlayerError(.inputMissing, "'\(path)': cannot be read (\(reason.lowercased()))")
        case .empty:
            throw PlayerError(.inputEmpty, "'\(path)': the file is empty")
        case .text:
            throw PlayerError(.inputNotMedia, "'\(path)': this is a text file, not media")
        case nil:
            break
        }
        let options = demuxerOptions(for: path)
        if !options.isEmpty, let problem = PlaylistCheck.problem(inMasterAt: path) {
            throw PlayerError(.inputTruncated, "'\(path)': \(problem) (a damaged or unfinished package)")
        }
        let input: InputContext
        do {
            input = try InputContext(
                path: path, options: options, interruption: interruption, pictureLimit: pictureLimit)
        } catch {
            throw classify(error, path: path)
        }
        let playable = input.streams.contains {
            ($0.mediaType == .audio || $0.mediaType == .video) && !$0.isAttachedPicture
        }
        guard playable else {
            if InputContext.probeContent(path: path) == nil && input.streams.isEmpty {
                throw PlayerError(.inputUnrecognised, "'\(path)': not a media format FFmpeg recognises")
            }
            let kinds = input.streams.map(\.mediaType.rawValue)
            throw PlayerError(
                .inputNoStreams,
                "'\(path)': no audio or video stream (\(kinds.isEmpty ? "no streams" : kinds.joined(separator: ", ")))")
        }
        return input
    }

    /// The player's error for a failure to open `path`, following MediaCore's one classification
    /// (`InputContext.classifyOpenFailure`) that the packager follows too.
    static func classify(_ error: MediaError, path: String) -> PlayerError {
        switch error.kind {
        case .notFound:
            return PlayerError(.inputMissing, "'\(path)': \(error.message)")
        case .truncated:
            let format = InputContext.probeContent(path: path).map { " \($0.formatName)" } ?? ""
            return PlayerError(.inputTruncated, "'\(path)': truncated or damaged\(format) file (\(error.message))")
        case .pictureTooLarge:
            return PlayerError(
                .inputPictureTooLarge, "'\(path)': \(error): pass --max-pixels to raise the limit if you trust it")
        case .undecodablePicture:
            return PlayerError(.inputPictureTooLarge, "'\(path)': \(error)")
        case .unsupported:
            return PlayerError(.inputUnsupported, "'\(path)': \(error.message)")
        case .invalidData, .io, .other:
            return PlayerError(
                .inputUnrecognised, "'\(path)': not a media format FFmpeg recognises (\(error.message))")
        }
    }

    /// A local HLS playlist may name a local key file, which FFmpeg's HLS demuxer reads only when told
    /// that any extension is allowed (otherwise it passes SAMPLE-AES video through still encrypted).
    /// The user chose the playlist, so its own files are trusted as ffplay would with the same option.
    static func demuxerOptions(for path: String) -> [String: String] {
        guard !path.contains("://"), let head = ReadOnlyFile.head(of: path, count: 16) else { return [:] }
        return InputFile.isPlaylist(head) ? ["allowed_extensions": "ALL"] : [:]
    }
}
