import Crypto
import Foundation

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
    /// with mode 0600 and a fresh random key when it does not exist. A file that others may read is
    /// refused.
    public static func load(environmentValue: String?, file path: String) throws(StoreError) -> KeyEncryptionKey {
        if let environmentValue {
            return try parse(environmentValue, source: "GUARDPLAY_KEK")
        }
        if !FileManager.default.fileExists(atPath: path) {
            try create(at: path)
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw StoreError(operation: "stat(\(path))", message: String(cString: strerror(errno)))
        }
        guard info.st_mode & 0o077 == 0 else {
            throw StoreError(
                operation: "KeyEncryptionKey(\(path))",
                message: "the file is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it"
            )
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError(operation: "read(\(path))", message: "cannot read the key-encryption key file")
        }
        return try parse(String(decoding: data, as: UTF8.self), source: path)
    }

    private static func parse(_ text: String, source: String) throws(StoreError) -> KeyEncryptionKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.count == 64, let bytes = [UInt8](hex: trimmed) else {
            throw StoreError(operation: "KeyEncryptionKey(\(source))", message: "must be 64 hexadecimal digits")
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
