import ControlAPI
import Foundation

/// The JSON parser and the request body readers.
enum JSONFuzzing {
    /// Parses; a parsed value must serialise to text that parses back to the same value.
    static func parse(_ data: UnsafeRawBufferPointer) {
        guard let value = try? JSON.parse(Array(data)) else { return }
        let text = value.serialized
        let again: JSON
        do { again = try JSON.parse(text) } catch {
            fatalError("serialised JSON does not parse: \(error): \(value.text)")
        }
        precondition(again == value, "JSON round trip changed the value: \(value.text) -> \(again.text)")
    }

    /// Reads the body as every request body type; each either reads it or throws a problem (4xx).
    static func requestBodies(_ data: UnsafeRawBufferPointer) {
        guard case .object(let members)? = try? JSON.parse(Array(data)) else { return }
        let body = JSONObject(members: members)
        let readers: [(String, (JSONObject) throws -> Void)] = [
            ("sessions", { _ = try SessionCreationBody($0, maxTTL: 86_400) }),
            ("capture-state", { _ = try CaptureReportBody($0) }),
            ("commands", { _ = try SessionCommandBody($0) }),
            ("packaging-jobs", { _ = try PackagingJobBody($0) }),
            ("assets", { _ = try AssetImportBody($0) }),
            ("policy", { _ = try AssetPolicyBody($0) }),
            ("player/seek", { _ = try PlayerSeekBody($0) }),
            ("player/capture-state", { _ = try PlayerCaptureReportBody($0) }),
            ("licenses/clearkey", { _ = try ClearKeyLicenseBody($0) }),
        ]
        for (name, read) in readers {
            do { try read(body) } catch let problem as APIProblem {
                precondition((400..<500).contains(problem.problem.status), "\(name): \(problem.problem.status)")
            } catch {
                fatalError("\(name): a body reader threw \(error), not a problem")
            }
        }
    }
}
