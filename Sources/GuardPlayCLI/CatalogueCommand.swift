import Dispatch
import FoundationEssentials
import MediaCore
import Packager
import Synchronization
import SystemSupport
import ThreadSupport

/// `guard-play catalogue DIR --out OUT`: packages every media file under DIR with `package`'s options and
/// verifies each output against its source, in-process, `--jobs` files at a time; reports per file as
/// text, JSON (`--report`) and JUnit XML (`--junit`), and fails when any file does.
enum CatalogueCommand {
    static let help = [intro, PackageCommand.help.optionLines(excluding: ["out", "key-file", "json"]), exitCodes]
        .joined(separator: "\n")

    private static let intro = """
        usage: guard-play catalogue DIR --out OUT [options]

        Packages every media file under DIR (at any depth; hidden files and text are skipped) as
        encrypted HLS and verifies each output against its source, as `package` then `verify --source`
        would. Each file's output is built aside and renamed into place. Prints a progress bar on a
        terminal and one line per file otherwise.
          OUT/hls/PATH/      the publishable output for DIR/PATH.EXT (no key inside)
          OUT/keys/PATH.key  its content key, mode 0600: for the key server, never to publish

          --out OUT                 output directory (required); an OUT that is, holds or lies in DIR is
                                    refused (exit 2)
          --report FILE             write a JSON report: each file's result, exit code, message and
                                    durations
          --junit FILE              write JUnit XML, one test case per file, so CI shows each as a test
          --jobs N                  files packaged at once, 1-64 (default 1)

        Packaging options, as for `guard-play package` (each applies to every file):
        """

    private static let exitCodes = """

        Exit codes: 0 every file packaged and verified; 2 usage; 3 bad option value; 10 no DIR, or no
        media file under it; 20 a report could not be written; 40 some file failed (the report says which
        and why); 130 interrupted.
        """

    /// `package`'s options that apply per file, and the catalogue's own.
    static let options: [Arguments.Option] =
        PackageCommand.options.filter { !["out", "key-file", "json"].contains($0.name) } + [
            .init("out"), .init("report"), .init("junit"), .init("jobs"),
        ]

    static func run(_ arguments: [String]) throws(CLIError) -> ExitCode {
        let parsed = try Arguments(arguments, options: options)
        MediaLog.setLevel(.quiet)  // each file's one-line error speaks instead
        guard parsed.positionals.count == 1 else {
            throw CLIError(
                .usage, parsed.positionals.isEmpty ? "catalogue needs a DIR\n\(help)" : "catalogue takes one DIR")
        }
        guard let out = parsed.value("out"), !out.isEmpty else { throw CLIError(.usage, "catalogue needs --out OUT") }
        let root = parsed.positionals[0]
        let jobs =
            try parsed.parsed("jobs", as: "a number from 1 to 64") {
                Int($0).flatMap { (1...64).contains($0) ? $0 : nil }
            }
            ?? 1
        // Every per-file option is checked once, before any file is touched.
        _ = try PackageCommand.packagingOptions(parsed, input: root, output: out, keyFile: nil)
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory else {
            throw CLIError(.inputMissing, "no directory \(root)")
        }
        if PathIdentity(out).overlaps(PathIdentity(root)) {
            throw CLIError(.usage, "--out \(out) and \(root) overlap: the outputs would land among the inputs")
        }
        for (flag, path) in [("report", parsed.value("report")), ("junit", parsed.value("junit"))] {
            if let path, PathIdentity(root).contains(PathIdentity(path)) {
                throw CLIError(.usage, "--\(flag) \(path) lies inside \(root), among the inputs")
            }
        }
        let files = try CatalogueFiles.list(under: root)
        guard !files.isEmpty else { throw CLIError(.inputMissing, "no media file under \(root)") }
        var names: [String: String] = [:]
        for file in files {
            let name = file.deletingPathExtension
            if let other = names.updateValue(file, forKey: name) {
                throw CLIError(.usage, "\(other) and \(file) would both be packaged to \(out)/hls/\(name); rename one")
            }
        }

        let catalogue = Catalogue(root: root, out: out, files: files, parsed: parsed)
        let trap = InterruptTrap(onSignal: { catalogue.cancellation.cancel() }, lastResort: {})
        defer { trap.release() }
        let display = CatalogueDisplay(files: files, quiet: parsed.has("quiet"))
        let started = Date()
        let results = catalogue.run(jobs: jobs) { result in display.finished(result) }
        display.end()
        let summary = CatalogueSummary(
            results: results, root: root, out: out, seconds: Date().timeIntervalSince(started))
        do {
            if let path = parsed.value("report") {
                try Data(summary.json().utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            }
            if let path = parsed.value("junit") {
                try Data(summary.junit().utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            }
        } catch {
            throw CLIError(.outputFailed, "cannot write the report: \(failureText(error))")
        }
        print(summary.line)
        if catalogue.cancellation.isCancelled { return .interrupted }
        return summary.failed == 0 ? .success : .catalogueFailed
    }
}
