import Foundation
import MediaCore

/// Opens a media file and turns every way it can be bad into a specific `PlayerError`.
enum InputProbe {
    /// Opens `path`, or throws: missing, empty, text, unrecognised bytes, truncated, no streams.
    static func open(_ path: String) throws(PlayerError) -> InputContext {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw PlayerError(.inputMissing, "'\(path)': no such file")
        }
        guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: path) else {
            throw PlayerError(.inputMissing, "'\(path)': cannot be read")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        if size == 0 { throw PlayerError(.inputEmpty, "'\(path)': the file is empty") }
        if isText(path) { throw PlayerError(.inputNotMedia, "'\(path)': this is a text file, not media") }
        let input: InputContext
        do {
            input = try InputContext(path: path)
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

    /// True when the first 4 KiB are printable UTF-8 text with no NUL bytes.
    static func isText(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 4096), !data.isEmpty else { return false }
        let bytes = [UInt8](data)
        if bytes.contains(0) { return false }
        var cut = bytes
        // A multi-byte character may be split at the end of the sample.
        while let last = cut.last, last & 0xC0 == 0x80 || last >= 0xC0 { cut.removeLast() }
        guard String(validating: cut, as: UTF8.self) != nil else { return false }
        let control = bytes.filter { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D && $0 != 0x0C }
        return control.count * 100 <= bytes.count
    }
}
