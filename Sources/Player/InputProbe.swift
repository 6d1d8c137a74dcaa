import Foundation
import MediaCore

/// Opens a media file and turns every way it can be bad into a specific `PlayerError`.
enum InputProbe {
    /// Opens `path`, or throws: missing, empty, text, unrecognised bytes, truncated, no streams, or a
    /// local HLS master playlist naming playlists FFmpeg cannot open safely.
    static func open(_ path: String, interruption: InputInterruption? = nil) throws(PlayerError) -> InputContext {
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
            input = try InputContext(path: path, options: options, interruption: interruption)
        } catch {
            if error.kind == .notFound { throw PlayerError(.inputMissing, "'\(path)': \(error.message)") }
            // A container recognised from its content alone, that still fails to open, was cut short or
            // damaged in its index; bytes no format claims are just not media.
            if let probe = InputContext.probeContent(path: path), probe.score >= 50 {
                throw PlayerError(
                    .inputTruncated, "'\(path)': truncated or damaged \(probe.formatName) file (\(error.message))")
            }
            throw PlayerError(.inputUnrecognised, "'\(path)': not a media format FFmpeg recognises (\(error.message))")
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

    /// A local HLS playlist may name a local key file, which FFmpeg's HLS demuxer reads only when told
    /// that any extension is allowed (otherwise it passes SAMPLE-AES video through still encrypted).
    /// The user chose the playlist, so its own files are trusted as ffplay would with the same option.
    static func demuxerOptions(for path: String) -> [String: String] {
        guard !path.contains("://"), let handle = FileHandle(forReadingAtPath: path) else { return [:] }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 16)) ?? Data())
        return InputFile.isPlaylist(head) ? ["allowed_extensions": "ALL"] : [:]
    }
}
