import MediaCore

extension PackagingJob {
    /// Refuses an output directory that is or holds the input or the key file, and a key file that is
    /// the input (a hard link or a symbolic link to it too) or lies inside the output, before anything
    /// is written: `--force` would otherwise replace the user's media with HLS or with 16 key bytes.
    ///
    /// Paths are compared by `PathIdentity` (resolved paths, then device and inode), never as strings.
    func checkPathsApart() throws(PackagingError) {
        let input = PathIdentity(options.input)
        let output = PathIdentity(options.output)
        if output.contains(input) {
            throw PackagingError(
                .pathConflict,
                "--out \(options.output) \(output.isSame(as: input) ? "is" : "contains") the input "
                    + "\(options.input): packaging would replace it; choose an output directory elsewhere")
        }
        guard let keyFile = options.keyFile, options.encryption != .none else { return }
        let key = PathIdentity(keyFile)
        if key.contains(input) {
            throw PackagingError(
                .pathConflict,
                "the key file \(keyFile) is the input \(options.input): writing the key would replace it; "
                    + "choose another --key-file")
        }
        if output.contains(key) {
            throw PackagingError(
                .pathConflict,
                "the key file \(keyFile) is inside the output directory \(options.output), which is published: "
                    + "put it elsewhere")
        }
    }
}
