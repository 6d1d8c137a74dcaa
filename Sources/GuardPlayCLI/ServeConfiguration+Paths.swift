import ControlAPI
import MediaCore

extension ServeConfiguration {
    /// Refuses a data directory that is the input root or holds it: packaging inputs would then lie
    /// among the gateway's own files (job outputs it replaces and deletes, the database, the KEK).
    /// Paths are compared by `PathIdentity`, through links and other spellings. An input root that
    /// holds the data directory (the defaults, `.` and `./guard-data`) is allowed: each job refuses
    /// an input inside the data directory instead.
    func checkDirectoriesApart() throws(CLIError) {
        let data = PathIdentity(dataDirectory)
        let inputs = PathIdentity(inputRoot)
        guard data.contains(inputs) else { return }
        let relation = data.isSame(as: inputs) ? "is the same directory as" : "holds"
        throw CLIError(
            .usage,
            "--data \(dataDirectory) \(relation) --input-root \(inputRoot): packaging inputs would lie among the "
                + "gateway's own files; give each a directory of its own")
    }
}
