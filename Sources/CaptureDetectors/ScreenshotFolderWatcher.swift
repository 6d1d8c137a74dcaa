import FoundationEssentials
import Glibc
import Synchronization
import SystemSupport

/// Watches the folders where screenshot tools save (with inotify) and reports each new image. A
/// screenshot cannot be seen coming, so this is for the audit trail only: it never changes the capture
/// state.
public final class ScreenshotFolderWatcher: Sendable {
    /// A picture that appeared in a watched folder.
    public struct Sighting: Sendable, Hashable {
        /// The file's full path.
        public var path: String
        /// When it was seen (seconds since 1970).
        public var seenAt: Double
    }

    private let descriptor: Int32
    private let watched: [Int32: String]
    private let stopped = Mutex(false)

    /// The folders watched.
    public var folders: [String] { watched.values.sorted() }

    /// The default folders: `~/Pictures/Screenshots`, `~/Pictures` and the XDG pictures folder from
    /// `~/.config/user-dirs.dirs`, those that exist.
    public static func defaultFolders(environment: [String: String]? = nil) -> [String] {
        let environment = environment ?? ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        var folders = ["\(home)/Pictures/Screenshots", "\(home)/Pictures"]
        let config = environment["XDG_CONFIG_HOME"] ?? "\(home)/.config"
        if let text = try? String(contentsOfFile: "\(config)/user-dirs.dirs", encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("XDG_PICTURES_DIR=") {
                let value = line.dropFirst("XDG_PICTURES_DIR=".count).trimmingScalars { $0 == "\"" }
                let path = value.replacing("$HOME", with: home)
                folders.append(path)
                folders.append(path + "/Screenshots")
            }
        }
        var seen = Set<String>()
        return folders.filter { seen.insert($0).inserted && FileManager.default.fileExists(atPath: $0) }
    }

    /// Starts watching `folders` and calls `onSighting` from its own thread for every image file closed
    /// after writing or moved in. Returns nil when inotify cannot be set up or no folder could be watched.
    public init?(folders: [String], onSighting: @escaping @Sendable (Sighting) -> Void) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        var watched: [Int32: String] = [:]
        for folder in folders {
            let watch = inotify_add_watch(descriptor, folder, UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO))
            if watch >= 0 { watched[watch] = folder }
        }
        guard !watched.isEmpty else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        self.watched = watched
        startThread(name: "guardplay.screenshots") { [self] in
            self.readEvents(onSighting)
        }
    }

    /// Stops watching. Removing the watches queues `IN_IGNORED` events, which wake the reading thread;
    /// it sees the flag and closes the descriptor itself, so no read races a close.
    public func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if first {
            for watch in watched.keys { inotify_rm_watch(descriptor, watch) }
        }
    }

    static let imageExtensions: Set<String> = ["png", "jpg", "jpeg", "webp", "bmp", "gif", "avif", "jxl"]

    private func readEvents(_ onSighting: @Sendable (Sighting) -> Void) {
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 8192)
        while !stopped.withLock({ $0 }) {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            // A signal (SIGCHLD when a child of this process exits) interrupts the read; read again.
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (watch, length) = buffer.withUnsafeBytes { raw in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.wd, Int(event.len))
                }
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let nameBytes = buffer[nameStart..<min(nameStart + length, count)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                offset = nameStart + length
                guard let folder = watched[watch], !name.isEmpty else { continue }
                let suffix = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
                guard Self.imageExtensions.contains(suffix) else { continue }
                onSighting(Sighting(path: folder + "/" + name, seenAt: Date().timeIntervalSince1970))
            }
        }
    }
}
