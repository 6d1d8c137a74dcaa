import Crypto
package import FoundationEssentials
package import Gateway
import SystemSupport

// Every REST request body, read from its JSON object into a value before any handler acts on it.
// Each reader refuses unknown members first and then reads its fields in order, so the first
// problem in a body is the one reported. They need no gateway, so the fuzz targets drive them
// directly (`FuzzTargets`).

/// `POST /v1/sessions`.
package struct SessionCreationBody: Equatable {
    package static let fields: Set<String> = ["asset", "ttlSeconds"]
    package let asset: String
    package let ttlSeconds: Int64?

    /// Reads the body; `maxTTL` is the gateway's longest session lifetime in seconds.
    package init(_ body: JSONObject, maxTTL: Int64) throws {
        let body = try body.allowing(Self.fields)
        asset = try body.requiredID("asset")
        ttlSeconds = try body.integer("ttlSeconds", in: 1...max(1, maxTTL))
    }
}

/// `PUT /v1/sessions/{id}/capture-state`.
package struct CaptureReportBody: Equatable {
    package static let fields: Set<String> = ["capturing", "seq", "observedAt"]
    package let capturing: Bool
    package let seq: UInt64
    package let observedAt: Date

    /// Reads the body.
    package init(_ body: JSONObject) throws {
        let body = try body.allowing(Self.fields)
        capturing = try body.requiredBool("capturing")
        seq = UInt64(try body.requiredInteger("seq", in: 0...9_007_199_254_740_991))
        observedAt = try body.requiredTimestamp("observedAt")
    }
}

/// `POST /v1/sessions/{id}/commands`.
package struct SessionCommandBody: Equatable {
    package static let fields: Set<String> = ["command"]
    package let command: SessionCommand

    /// Reads the body.
    package init(_ body: JSONObject) throws {
        let name = try body.allowing(Self.fields).requiredString("command", maxLength: 16)
        guard let command = SessionCommand(rawValue: name) else {
            throw APIProblem.invalid("Field 'command' must be one of pause, resume, stop.")
        }
        self.command = command
    }
}

/// `POST /v1/packaging-jobs`.
package struct PackagingJobBody: Equatable {
    package static let fields: Set<String> = [
        "input", "asset", "denyKeysWhileCapturing", "container", "encryption", "keyPeriod", "watermark",
        "segmentDuration",
    ]
    package let input: String
    package let asset: String
    package let denyKeysWhileCapturing: Bool
    /// The container, encryption, key period, watermark and segment duration, as `guard-play package`
    /// takes them (checked by the gateway when the job is submitted).
    package let options: PackagingJobOptions

    /// Reads the body.
    package init(_ body: JSONObject) throws {
        let body = try body.allowing(Self.fields)
        input = try body.requiredString("input")
        asset = try body.requiredID("asset")
        denyKeysWhileCapturing = try body.bool("denyKeysWhileCapturing") ?? false
        options = PackagingJobOptions(
            container: try body.string("container", maxLength: 16),
            encryption: try body.string("encryption", maxLength: 16) ?? "sample-aes",
            keyPeriod: try body.integer("keyPeriod", in: 1...Int64(PackagingJobOptions.keyPeriodLimit)).map { Int($0) },
            watermark: try body.string("watermark", maxLength: 16),
            segmentDuration: try body.number("segmentDuration", in: PackagingJobOptions.segmentDurations))
    }
}

/// `PUT /v1/assets/{id}`.
package struct AssetImportBody: Equatable {
    package static let fields: Set<String> = ["directory", "keys", "denyKeysWhileCapturing"]
    package let keys: [ImportedKey]
    package let directory: String
    package let denyKeysWhileCapturing: Bool

    /// Reads the body.
    package init(_ body: JSONObject) throws {
        let body = try body.allowing(Self.fields)
        keys = try (body.array("keys", maxCount: 16) ?? []).map(Self.importedKey)
        directory = try body.requiredString("directory", maxLength: 4096)
        denyKeysWhileCapturing = try body.bool("denyKeysWhileCapturing") ?? false
    }

    static func importedKey(_ item: JSON) throws -> ImportedKey {
        guard case .object(let members) = item else { throw APIProblem.invalid("Each key must be an object.") }
        let object = try JSONObject(members: members).allowing(["kid", "key", "uri"])
        let kid = try object.requiredString("kid", maxLength: 32).lowercased()
        guard kid.utf8.count == 32, [UInt8](hex: kid) != nil else {
            throw APIProblem.invalid("Field 'kid' must be 32 hexadecimal digits.")
        }
        guard let key = [UInt8](hex: try object.requiredString("key", maxLength: 32)), key.count == 16 else {
            throw APIProblem.invalid("Field 'key' must be 32 hexadecimal digits (16 bytes).")
        }
        return ImportedKey(kid: kid, key: key, uri: try object.string("uri", maxLength: 1024))
    }
}

/// `PUT /v1/assets/{id}/policy`.
package struct AssetPolicyBody: Equatable {
    package static let fields: Set<String> = ["denyKeysWhileCapturing"]
    package let denyKeysWhileCapturing: Bool

    /// Reads the body.
    package init(_ body: JSONObject) throws {
        denyKeysWhileCapturing = try body.allowing(Self.fields).requiredBool("denyKeysWhileCapturing")
    }
}

/// `POST /v1/player/seek`.
package struct PlayerSeekBody: Equatable {
    package static let fields: Set<String> = ["position"]
    package let position: Double

    /// Reads the body.
    package init(_ body: JSONObject) throws {
        guard let position = try body.allowing(Self.fields).number("position", in: 0...1e9) else {
            throw APIProblem.invalid("Field 'position' is required.")
        }
        self.position = position
    }
}

/// `PUT /v1/player/capture-state`.
package struct PlayerCaptureReportBody: Equatable {
    package static let fields: Set<String> = ["capturing", "seq", "observedAt", "leaseSeconds"]
    package let capturing: Bool
    package let seq: UInt64
    package let leaseSeconds: Double
    package let observedAt: Date

    /// Reads the body; a missing lease is `PlayerRoutes.defaultLease`.
    package init(_ body: JSONObject) throws {
        let body = try body.allowing(Self.fields)
        capturing = try body.requiredBool("capturing")
        seq = UInt64(try body.requiredInteger("seq", in: 0...9_007_199_254_740_991))
        leaseSeconds = try body.number("leaseSeconds", in: 1...PlayerRoutes.maxLease) ?? PlayerRoutes.defaultLease
        observedAt = try body.requiredTimestamp("observedAt")
    }
}

/// `POST /v1/licenses/clearkey`: a W3C Clear Key license request (Encrypted Media Extensions §9.1.3),
/// `{"kids":["<base64url>"],"type":"temporary"}`. Every fault in it is a 400: a browser's CDM wrote it,
/// so a bad one is malformed rather than a field a person chose.
package struct ClearKeyLicenseBody: Equatable {
    package static let fields: Set<String> = ["kids", "type"]
    /// The largest body read, in bytes.
    package static let maxBytes = 4096
    /// The key IDs as 32 hex digits, in the order asked.
    package let kids: [String]
    /// The session type, which is always `temporary`: no persistent licenses are issued.
    package let type: String

    /// Reads the body.
    package init(_ body: JSONObject) throws {
        do {
            let body = try body.allowing(Self.fields)
            let items = try body.array("kids", maxCount: Gateway.maxLicenseKIDs) ?? []
            guard !items.isEmpty else { throw Self.malformed("'kids' must name at least one key ID.") }
            kids = try items.map { item in
                guard let text = item.string, let kid = ClearKeyID.hexKID(base64URL: text) else {
                    throw Self.malformed("Each of 'kids' must be a 16-byte key ID in base64url without padding.")
                }
                return kid
            }
            type = try body.string("type", maxLength: 32) ?? "temporary"
            guard type == "temporary" else {
                throw Self.malformed("'type' must be \"temporary\": this gateway issues no persistent licenses.")
            }
        } catch let problem as APIProblem where problem.problem.status == 422 {
            throw Self.malformed(problem.problem.detail)
        }
    }

    private static func malformed(_ detail: String) -> APIProblem {
        APIProblem.badRequest("invalid-license-request", detail)
    }
}
