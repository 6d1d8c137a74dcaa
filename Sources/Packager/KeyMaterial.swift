import Crypto
import FoundationEssentials
import Glibc
import MediaFormats
import SystemSupport

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
    /// The key URI before `{kid}` is substituted, or nil without encryption.
    var uriTemplate: String?
    /// Every key period's key, period 0 being `key`, `iv` and `keyID`.
    var ring: KeyRing

    /// The EXT-X-KEY line that names this key with `method` and `iv`, or nil without a key URI.
    func keyLine(method: String, iv: [UInt8]?) -> KeyLine? {
        guard let uri else { return nil }
        return KeyLine(
            method: method, uri: uri, iv: iv, keyFormat: keyFormat, keyFormatVersions: keyFormat == nil ? nil : "1")
    }

    /// The EXT-X-KEY line that names key period `period`'s key with `method` and `iv` (the period's
    /// own, or nil), or nil without a key URI.
    func keyLine(method: String, iv: [UInt8]?, period: Int) throws(PackagingError) -> KeyLine? {
        guard var line = keyLine(method: method, iv: iv) else { return nil }
        line.uri = try uri(period: period)
        return line
    }

    /// The key URI of key period `period` (its key ID substituted for `{kid}`), or nil without one.
    func uri(period: Int) throws(PackagingError) -> String? {
        guard let uriTemplate else { return nil }
        return uriTemplate.replacing("{kid}", with: try ring.key(period: period).keyID.hexString)
    }

    /// Resolves the options, drawing the key, IV and key ID not given from OpenSSL's RNG; `output` is
    /// the absolute output path.
    init(options: PackagingOptions, output: String) throws(PackagingError) {
        try self.init(options: options, output: output) { what throws(PackagingError) in
            do {
                return try SecureRandom.bytes(16)
            } catch {
                throw PackagingError(.outputFailed, "cannot draw a random \(what): \(error)")
            }
        }
    }

    /// Refuses what `init` would (bar a failing RNG) and an existing key file `checkKeyFile` would, and
    /// draws nothing: a job checks its key options before it opens its input, and draws its keys after,
    /// since OpenSSL's RNG set-up (about 2.5 MiB of libcrypto's pages and heap) would otherwise add to the
    /// demuxer's probe, the largest moment of an fMP4 run's memory.
    static func check(options: PackagingOptions, output: String) throws(PackagingError) {
        let unkeyed = try KeyMaterial(options: options, output: output) { _ in [UInt8](repeating: 0, count: 16) }
        try unkeyed.checkKeyFile(force: options.force)
    }

    /// Resolves the options, taking each of the key, IV and key ID not given from `draw`, which is told
    /// which it is drawing.
    private init(
        options: PackagingOptions, output: String, draw: (String) throws(PackagingError) -> [UInt8]
    ) throws(PackagingError) {
        func value(_ given: [UInt8]?, _ what: String) throws(PackagingError) -> [UInt8] {
            guard let given else { return try draw(what) }
            guard given.count == 16 else {
                throw PackagingError(
                    .invalidOptions, "the \(what) must be 16 bytes (32 hex digits), got \(given.count)")
            }
            return given
        }
        key = try value(options.key, "key")
        iv = try value(options.iv, "IV")
        keyID = try value(options.keyID, "key ID")
        keyFile = options.keyFile.map(OutputDirectory.absolutePath)
        keyFormat = options.keyFormat == .fairplay ? "com.apple.streamingkeydelivery" : nil
        ring = KeyRing(first: PeriodKey(keyID: keyID, key: key, iv: iv), period: options.keyPeriod)
        guard options.encryption != .none else {
            uri = nil
            return
        }
        var template: String
        if let given = options.keyURITemplate {
            template = given
        } else if options.keyFormat == .fairplay {
            template = "skd://{kid}"
        } else if options.keyPeriod != nil {
            throw PackagingError(
                .invalidOptions,
                "--key-period needs --key-uri with {kid} in it: the key file is then a key list, which no key URI "
                    + "can name, and each period's key needs a URI of its own")
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
        if options.keyPeriod != nil && !template.contains("{kid}") {
            throw PackagingError(
                .invalidOptions,
                "with --key-period the key URI '\(template)' must hold {kid}: players fetch one key per URI, so "
                    + "every key period needs a URI of its own")
        }
        uriTemplate = template
        uri = template.replacing("{kid}", with: keyID.hexString)
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

    /// Refuses an existing key file unless `force`, and even with `force` refuses anything but a key
    /// the packager wrote: a symbolic link (the name is opened with `O_NOFOLLOW`, so a link fails
    /// with `ELOOP` instead of leading to its target), or a file that is not 16 bytes with one link.
    /// Runs when the job starts and again just before the key is renamed into place.
    func checkKeyFile(force: Bool) throws(PackagingError) {
        guard let keyFile else { return }
        let descriptor = open(keyFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        let openError = errno
        if descriptor < 0 && openError == ENOENT { return }
        defer { if descriptor >= 0 { close(descriptor) } }
        if descriptor < 0 && openError == ELOOP {
            throw PackagingError(
                .outputExists,
                "key file \(keyFile) is a symbolic link: a key is never written through one; remove it or "
                    + "choose another --key-file")
        }
        guard force else {
            throw PackagingError(
                .outputExists,
                "key file \(keyFile) already exists: pass --force to replace it, or choose another --key-file")
        }
        var status = stat()
        guard descriptor >= 0, fstat(descriptor, &status) == 0 else {
            throw PackagingError(
                .outputExists,
                "cannot check the existing key file \(keyFile) before replacing it: \(String(cString: strerror(openError)))"
            )
        }
        let what: String? =
            if status.st_mode & S_IFMT != S_IFREG {
                "not a regular file"
            } else if status.st_size != 16 && !KeyMaterial.holdsKeyList(descriptor, size: Int(status.st_size)) {
                "\(status.st_size) bytes, neither 16 nor a key list"
            } else if status.st_nlink != 1 {
                "\(status.st_nlink) hard links"
            } else {
                nil
            }
        if let what {
            throw PackagingError(
                .outputExists,
                "key file \(keyFile) is not a key file guard-play package wrote (\(what)): --force replaces only "
                    + "a previous key; remove it yourself or choose another --key-file")
        }
    }

    /// Writes the 16 raw key bytes to a new 0600 sibling of the key file (`O_CREAT | O_EXCL |
    /// O_NOFOLLOW` under a random name, so nothing there is followed or reused) and returns its path,
    /// for the job to rename into place.
    func stageKeyFile() throws(PackagingError) -> String? {
        guard let keyFile else { return nil }
        let name = keyFile.lastPathComponent
        let parent = keyFile.deletingLastPathComponent
        OutputDirectory.removeStaleSiblings(of: name, in: parent)
        let random = (0..<4).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        let staged = "\(parent)/.\(name)\(OutputDirectory.marker)\(getpid())-key-\(random)\(OutputDirectory.suffix)"
        let descriptor = open(staged, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SegmentFile.failure("create the key file", staged) }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else {
            unlink(staged)
            throw SegmentFile.failure("restrict the key file", staged)
        }
        // One key: its 16 raw bytes (the file is then what the default key URI returns). Key periods: the
        // key list, one `KID KEY` line per period.
        let bytes =
            ring.period == nil ? key : Array(KeyListFormat.render(ring.keys.map { ($0.keyID, $0.key) }).utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(descriptor) == 0 else {
            unlink(staged)
            throw SegmentFile.failure("write the key file", staged)
        }
        return staged
    }

    /// True when the open file `descriptor` of `size` bytes holds a key list (`KeyListFormat`).
    private static func holdsKeyList(_ descriptor: Int32, size: Int) -> Bool {
        guard size > 0, size <= KeyListFormat.lineLimit * KeyListFormat.lineLength else { return false }
        var bytes = [UInt8](repeating: 0, count: size)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, size, 0) }
        return count == size && KeyListFormat.parse(bytes) != nil
    }
}
