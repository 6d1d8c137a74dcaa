import FoundationEssentials
import MediaFormats
import SystemSupport

/// A catalogue run's results in the three forms it reports them: a last line, JSON and JUnit XML.
struct CatalogueSummary {
    let results: [CatalogueResult]
    let root: String
    let out: String
    let seconds: Double

    var passed: Int { results.count { $0.status == .passed } }
    var failed: Int { results.count { $0.status == .failed } }
    var skipped: Int { results.count { $0.status == .skipped } }

    /// The closing line of the text output.
    var line: String {
        let skippedPart = skipped > 0 ? ", \(skipped) skipped" : ""
        return "catalogue: \(passed) of \(passed + failed) files packaged and verified\(skippedPart); "
            + "outputs in \(out)/hls, keys in \(out)/keys (\(String(cFormat: "%.1f", seconds)) s)"
    }

    /// The `--report` document.
    func json() -> String {
        let object: [String: Any] = [
            "directory": root, "out": out, "seconds": seconds, "passed": passed, "failed": failed, "skipped": skipped,
            "files": results.map { result -> [String: Any] in
                var entry: [String: Any] = [
                    "file": result.file, "status": result.status.rawValue, "exitCode": Int(result.exitCode),
                    "message": result.message, "packageSeconds": result.packageSeconds,
                    "verifySeconds": result.verifySeconds,
                ]
                if let stage = result.stage { entry["stage"] = stage }
                if let output = result.output { entry["output"] = output }
                if let keyFile = result.keyFile { entry["keyFile"] = keyFile }
                if let keyID = result.keyID { entry["keyId"] = keyID }
                if let segments = result.segments { entry["segments"] = segments }
                if let media = result.mediaSeconds { entry["mediaSeconds"] = media }
                return entry
            },
        ]
        let text = JSON(any: object)?.text(sortingKeys: true, pretty: true) ?? ""
        return text + "\n"
    }

    /// The `--junit` document: one suite, one test case per file, a failure or skip with its message.
    func junit() -> String {
        let time = { (value: Double) in String(cFormat: "%.3f", value) }
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8"?>"#,
            #"<testsuites name="guard-play catalogue" tests="\#(results.count)" failures="\#(failed)" "#
                + #"skipped="\#(skipped)" time="\#(time(seconds))">"#,
            #"  <testsuite name="\#(xml(root))" tests="\#(results.count)" failures="\#(failed)" "#
                + #"skipped="\#(skipped)" errors="0" time="\#(time(seconds))">"#,
        ]
        for result in results {
            let open =
                #"    <testcase classname="catalogue" name="\#(xml(result.file))" "#
                + #"time="\#(time(result.packageSeconds + result.verifySeconds))""#
            switch result.status {
            case .passed:
                lines.append(open + "/>")
            case .skipped:
                lines.append(open + ">")
                lines.append(#"      <skipped message="\#(xml(result.message))"/>"#)
                lines.append("    </testcase>")
            case .failed:
                let stage = result.stage ?? "package"
                lines.append(open + ">")
                lines.append(
                    #"      <failure type="\#(stage) exit \#(result.exitCode)" message="\#(xml(result.message))">"#
                        + "\(xml("\(stage) exited \(result.exitCode): \(result.message)"))</failure>")
                lines.append("    </testcase>")
            }
        }
        lines += ["  </testsuite>", "</testsuites>", ""]
        return lines.joined(separator: "\n")
    }

    /// `text` escaped for the report's XML attributes and elements.
    private func xml(_ text: String) -> String { MarkupElement.escaped(text) }
}
