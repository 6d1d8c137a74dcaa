import Crypto
import FoundationEssentials
import Glibc
import SystemSupport

/// The 32-byte key-encryption key that wraps content keys at rest. It never enters the database: it
/// comes from an environment variable (64 hex digits) or from a file readable by its owner only,
/// created on first start.
public struct KeyEncryptionKey: Sendable {
    let bytes: [UInt8]

    /// A KEK from raw bytes; tests use this.
    public init(bytes: [UInt8]) throws(StoreError) {
        guard bytes.count == 32 else {
            throw StoreError(operation: "KeyEncryptionKey", message: "must be 32 bytes, got \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// The KEK from `environmentValue` when given, otherwise from the file at `path`, which is created
    /// with mode 0600 and a fresh random key when it does not exist. Refused: a file that others may
    /// read or that another user owns, one below a directory others may write to (see
    /// `checkDirectories`), and a key whose 32 bytes are all the same (such as all zeros).
    ///
    /// A file directly in `credentialsDirectory` (systemd's `$CREDENTIALS_DIRECTORY`, where
    /// `LoadCredential=` puts it) is systemd's: it may be owned by root, and its group bits may show
    /// the mask of the ACL that lets the service read it, but it still may not be writable by anyone
    /// but its owner nor readable by others.
    ///
    /// `variable` names the environment variable in messages: the gateway's other server secrets (the
    /// watermarking key) are kept the same way.
    public static func load(
        environmentValue: String?, file path: String, credentialsDirectory: String? = nil,
        variable: String = "GUARDPLAY_KEK"
    ) throws(StoreError) -> KeyEncryptionKey {
        if let environmentValue {
            return try parse(environmentValue, source: variable)
        }
        if !FileManager.default.fileExists(atPath: path) {
            try checkDirectories(above: path)
            try create(at: path)
        }
        return try read(path, credential: isCredential(path, credentialsDirectory: credentialsDirectory))
    }

    /// What `load` would refuse, without creating the file when it is missing (its directories are
    /// checked instead): for `--check-config`. Returns where the key comes from.
    public static func check(
        environmentValue: String?, file path: String, credentialsDirectory: String? = nil,
        variable: String = "GUARDPLAY_KEK"
    ) throws(StoreError) -> String {
        if let environmentValue {
            _ = try parse(environmentValue, source: variable)
            return variable
        }
        guard FileManager.default.fileExists(atPath: path) else {
            try checkDirectories(above: path)
            return "\(path) (created on start)"
        }
        _ = try read(path, credential: isCredential(path, credentialsDirectory: credentialsDirectory))
        return path
    }

    /// Opens `path` without following a final symbolic link and checks the open file itself, so the
    /// checks and the read see the same file.
    private static func read(_ path: String, credential: Bool) throws(StoreError) -> KeyEncryptionKey {
        let operation = "KeyEncryptionKey(\(path))"
        try checkDirectories(above: path)
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StoreError(operation: "open(\(path))", message: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw StoreError(operation: "fstat(\(path))", message: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StoreError(operation: operation, message: "not a regular file")
        }
        // A credential's group bits are the ACL mask (read for the service's user): only write counts.
        guard info.st_mode & (credential ? 0o027 : 0o077) == 0 else {
            let access = info.st_mode & 0o022 != 0 ? "writable" : "readable"
            throw StoreError(
                operation: operation,
                message:
                    "the file is \(access) by others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        let owner = geteuid()
        guard info.st_uid == owner || (credential && info.st_uid == 0) else {
            throw StoreError(
                operation: operation,
                message: "the file is owned by uid \(info.st_uid), not by this process's user (uid \(owner)); chown it")
        }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        // A key file is 65 bytes; reading stops past 4 KiB, which parse then refuses.
        while data.count <= 4096 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw StoreError(operation: "read(\(path))", message: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            data += chunk[..<count]
        }
        return try parse(String(decoding: data, as: UTF8.self), source: path)
    }

    /// Whether `path` lies directly in systemd's credentials directory.
    private static func isCredential(_ path: String, credentialsDirectory: String?) -> Bool {
        guard let credentialsDirectory, !credentialsDirectory.isEmpty else { return false }
        let parent = URL(fileURLWithPath: path).deletingLastPathComponent().resolvingSymlinksInPath().path
        return parent == URL(fileURLWithPath: credentialsDirectory).resolvingSymlinksInPath().path
    }

    /// Refuses a KEK file below a directory that users other than its owner may write to (a group or
    /// other write bit) without the sticky bit: such a user could put another key in its place.
    /// `/tmp` (mode 1777) passes. Checks the resolved directory and every one above it; one that does
    /// not exist yet (the data directory before the first start) is skipped.
    private static func checkDirectories(above path: String) throws(StoreError) {
        var directory = URL(fileURLWithPath: path).deletingLastPathComponent().resolvingSymlinksInPath()
        while true {
            var info = stat()
            if stat(directory.path, &info) == 0 {
                if info.st_mode & 0o022 != 0 && info.st_mode & S_ISVTX == 0 {
                    throw StoreError(
                        operation: "KeyEncryptionKey(\(path))",
                        message: "the directory \(directory.path) is writable by others (mode "
                            + "\(String(info.st_mode & 0o7777, radix: 8))) without the sticky bit; chmod go-w it")
                }
            } else if errno != ENOENT {
                throw StoreError(operation: "stat(\(directory.path))", message: String(cString: strerror(errno)))
            }
            if directory.path == "/" { return }
            directory.deleteLastPathComponent()
        }
    }

    private static func parse(_ text: String, source: String) throws(StoreError) -> KeyEncryptionKey {
        let trimmed = text.trimmingSpacesAndLineBreaks()
        guard trimmed.count == 64, let bytes = [UInt8](hex: trimmed) else {
            throw StoreError(operation: "KeyEncryptionKey(\(source))", message: "must be 64 hexadecimal digits")
        }
        guard Set(bytes).count > 1 else {
            throw StoreError(
                operation: "KeyEncryptionKey(\(source))",
                message:
                    "all 32 bytes are the same (\(trimmed.prefix(2))): not a key; make one with `openssl rand -hex 32`"
            )
        }
        return try KeyEncryptionKey(bytes: bytes)
    }

    /// Writes a new key beside `path` and links it into place, so a crash never leaves half a key
    /// and two processes starting at once agree on one.
    private static func create(at path: String) throws(StoreError) {
        let bytes: [UInt8]
        do { bytes = try SecureRandom.bytes(32) } catch {
            throw StoreError(operation: "KeyEncryptionKey", message: error.description)
        }
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(operation: "open(\(temporary))", message: String(cString: strerror(errno)))
        }
        defer { unlink(temporary) }
        let text = Array((bytes.hexString + "\n").utf8)
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == text.count, synced == 0 else {
            throw StoreError(operation: "write(\(temporary))", message: String(cString: strerror(errno)))
        }
        if link(temporary, path) != 0 && errno != EEXIST {
            throw StoreError(operation: "link(\(path))", message: String(cString: strerror(errno)))
        }
    }

    /// A key for another purpose derived from the KEK (HMAC-SHA256 of `purpose` under it), so rotating
    /// the KEK rotates everything derived from it.
    public func derivedKey(for purpose: String) -> [UInt8] {
        Digest.hmacSHA256(key: bytes, data: Array(purpose.utf8))
    }

    /// Seals a content key; the key ID is bound in as associated data, so a wrapped key cannot be
    /// moved to another row.
    func wrap(_ key: [UInt8], kid: String) throws(StoreError) -> [UInt8] {
        do { return try AESGCM.seal(key, key: bytes, associatedData: Self.associatedData(kid)) } catch {
            throw StoreError(operation: "wrap(\(kid))", message: error.description)
        }
    }

    /// Opens a wrapped content key.
    func unwrap(_ box: [UInt8], kid: String) throws(StoreError) -> [UInt8] {
        do { return try AESGCM.open(box, key: bytes, associatedData: Self.associatedData(kid)) } catch {
            throw StoreError(
                operation: "unwrap(\(kid))",
                message: "the content key does not open: wrong key-encryption key or an altered row")
        }
    }

    private static func associatedData(_ kid: String) -> [UInt8] { Array("guardplay/content-key/v1/\(kid)".utf8) }
}
