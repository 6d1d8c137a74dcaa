import Crypto
import Foundation
import Glibc

/// The key, IV and key ID of a job (given or drawn from OpenSSL's RNG), the key URI the playlists name,
/// and the key file written with mode 0600 beside, never inside, the output.
struct KeyMaterial {
    var key: [UInt8]
    var iv: [UInt8]
    var keyID: [UInt8]
    /// The key URI with `{kid}` substituted, or nil without encryption.
    var uri: String?
    /// The KEYFORMAT for the playlists, nil for `identity`.
    var keyFormat: String?
    /// The absolute key file path, or nil.
    var keyFile: String?

    /// Resolves the options; `output` is the absolute output path.
    init(options: PackagingOptions, output: String) throws(PackagingError) {
        func value(_ given: [UInt8]?, _ what: String) throws(PackagingError) -> [UInt8] {
            if let given {
                guard given.count == 16 else {
                    throw PackagingError(
                        .invalidOptions, "the \(what) must be 16 bytes (32 hex digits), got \(given.count)")
                }
                return given
            }
            do {
                return try SecureRandom.bytes(16)
            } catch {
                throw PackagingError(.outputFailed, "cannot draw a random \(what): \(error)")
            }
        }
        key = try value(options.key, "key")
        iv = try value(options.iv, "IV")
        keyID = try value(options.keyID, "key ID")
        keyFile = options.keyFile.map(OutputDirectory.absolutePath)
        keyFormat = options.keyFormat == .fairplay ? "com.apple.streamingkeydelivery" : nil
        guard options.encryption != .none else {
            uri = nil
            return
        }
        if let keyFile, keyFile == output || keyFile.hasPrefix(output + "/") {
            throw PackagingError(
                .invalidOptions,
                "the key file \(keyFile) is inside the output directory, which is published: put it elsewhere")
        }
        var template: String
        if let given = options.keyURITemplate {
            template = given
        } else if options.keyFormat == .fairplay {
            template = "skd://{kid}"
        } else if let keyFile {
            template = KeyMaterial.relativePath(from: output, to: keyFile)
        } else {
            throw PackagingError(
                .invalidOptions, "give a key URI template or a key file to name the key in the playlists")
        }
        if options.keyFormat == .fairplay && !template.hasPrefix("skd://") {
            throw PackagingError(.invalidOptions, "FairPlay key URIs use the skd:// scheme, got '\(template)'")
        }
        if let bad = template.unicodeScalars.first(where: { $0.value < 0x20 || $0 == "\"" || $0.value == 0x7F }) {
            throw PackagingError(
                .invalidOptions,
                "the key URI template holds \(bad == "\"" ? "a quote" : "a control character"), which a playlist cannot carry"
            )
        }
        uri = template.replacingOccurrences(of: "{kid}", with: keyID.hexString)
    }

    /// The path of `target` relative to the directory `base` (both absolute).
    static func relativePath(from base: String, to target: String) -> String {
        let from = base.split(separator: "/")
        let to = target.split(separator: "/")
        var common = 0
        while common < min(from.count, to.count) && from[common] == to[common] { common += 1 }
        let up = Array(repeating: "..", count: from.count - common)
        return (up + to[common...].map(String.init)).joined(separator: "/")
    }

    /// Refuses an existing key file unless `force`.
    func checkKeyFile(force: Bool) throws(PackagingError) {
        guard let keyFile else { return }
        var status = stat()
        if lstat(keyFile, &status) == 0 && !force {
            throw PackagingError(
                .outputExists,
                "key file \(keyFile) already exists: pass --force to replace it, or choose another --key-file")
        }
    }

    /// Writes the 16 raw key bytes to a 0600 sibling of the key file and returns its path, for
    /// `publishKeyFile` to rename into place.
    func stageKeyFile() throws(PackagingError) -> String? {
        guard let keyFile else { return nil }
        let name = (keyFile as NSString).lastPathComponent
        let parent = (keyFile as NSString).deletingLastPathComponent
        OutputDirectory.removeStaleSiblings(of: name, in: parent)
        let staged = "\(parent)/.\(name)\(OutputDirectory.marker)\(getpid())-key\(OutputDirectory.suffix)"
        unlink(staged)
        let descriptor = open(staged, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SegmentFile.failure("create the key file", staged) }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else { throw SegmentFile.failure("restrict the key file", staged) }
        let written = key.withUnsafeBytes { write(descriptor, $0.baseAddress, 16) }
        guard written == 16, fsync(descriptor) == 0 else { throw SegmentFile.failure("write the key file", staged) }
        return staged
    }
}
