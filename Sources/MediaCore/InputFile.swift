import FoundationEssentials
import Glibc
import SystemSupport

/// What is wrong with an input path before FFmpeg is asked to open it.
public enum InputFileProblem: Sendable, Equatable {
    /// The path does not name a readable regular file; `reason` is the system's text or `is a directory`.
    case unreadable(reason: String)
    /// The file has no bytes.
    case empty
    /// The file is text, not media.
    case text
}

/// The checks every command runs on an input file first, so a missing, empty or text file gets the same
/// specific answer from the player and the packager.
public enum InputFile {
    /// The problem with `path`, or nil when it is a readable, non-empty file that does not read as text.
    ///
    /// HLS playlists (`#EXTM3U`) are text that FFmpeg can open, so they pass. URLs (`scheme://…`), pipes
    /// and devices are taken on trust, since sniffing them would consume their bytes.
    public static func problem(at path: String) -> InputFileProblem? {
        if let scheme = path.firstRange(of: "://"), path[..<scheme.lowerBound].allSatisfy({ $0.isLetter }) {
            return nil
        }
        var status = stat()
        guard stat(path, &status) == 0 else { return .unreadable(reason: String(cString: strerror(errno))) }
        let type = status.st_mode & S_IFMT
        if type == S_IFDIR { return .unreadable(reason: "is a directory") }
        guard type == S_IFREG else { return nil }
        guard status.st_size > 0 else { return .empty }
        guard let head = ReadOnlyFile.head(of: path, count: 4096) else {
            return .unreadable(reason: String(cString: strerror(EACCES)))
        }
        if isPlaylist(head) { return nil }
        return looksLikeText(head) ? .text : nil
    }

    /// True when `bytes` start an HLS playlist.
    public static func isPlaylist(_ bytes: [UInt8]) -> Bool {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let body = bytes.starts(with: bom) ? Array(bytes.dropFirst(3)) : bytes
        return body.starts(with: Array("#EXTM3U".utf8))
    }

    /// True when `bytes` hold no NUL, are valid UTF-8 (a character cut at the end is allowed), and at most
    /// 1 % of them are control characters other than tab, line feed, carriage return and form feed.
    public static func looksLikeText(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, !bytes.contains(0) else { return false }
        var cut = bytes[...]
        // Drop a multi-byte character split by the end of the sample.
        var trailing = 0
        while let last = cut.last, last & 0xC0 == 0x80, trailing < 3 {
            cut = cut.dropLast()
            trailing += 1
        }
        if let last = cut.last, last >= 0xC0 { cut = cut.dropLast() }
        guard String(validating: cut, as: UTF8.self) != nil else { return false }
        let control = bytes.filter { $0 < 0x20 && ![0x09, 0x0A, 0x0C, 0x0D].contains($0) || $0 == 0x7F }
        return control.count * 100 <= bytes.count
    }
}
