/// How a packaging job packages, as `guard-play package` takes it: the container (`ts` or `fmp4`), the
/// encryption (`sample-aes`, `cenc`, `aes-128` or `none`), the key period (a new key every so many
/// segments, or nil for one key), the forensic watermark (`ab`, or nil for none) and the target segment
/// duration. Stored with the job as one line of text, so a job a restart requeues
/// packages as it was asked to.
public struct PackagingJobOptions: Sendable, Equatable {
    /// The containers a job may ask for.
    public static let containers = ["ts", "fmp4"]
    /// The encryption modes a job may ask for.
    public static let encryptions = ["sample-aes", "cenc", "aes-128", "none"]
    /// The largest key period, in segments (the packager's own limit).
    public static let keyPeriodLimit = 100_000
    /// The watermarks a job may ask for (`--watermark ab`).
    public static let watermarks = ["ab"]
    /// The segment durations a job may ask for, in seconds (the packager's own limits).
    public static let segmentDurations: ClosedRange<Double> = 1...60
    /// The target segment duration when a job names none (the packager's default).
    public static let defaultSegmentDuration = 6.0

    /// `ts` or `fmp4`.
    public var container: String
    /// True when the job named no container: HEVC input then gets fMP4, as `guard-play package` without
    /// `--container` does, where an explicit `ts` is refused.
    public var containerIsDefault: Bool
    /// `sample-aes`, `cenc`, `aes-128` or `none`.
    public var encryption: String
    /// Segments per key period, or nil for one key.
    public var keyPeriod: Int?
    /// `ab` for two watermark variants of every video segment, which the gateway serves per session
    /// (the output's `watermark.json` names them); nil for none.
    public var watermark: String?
    /// The target segment duration in seconds, or nil for the packager's 6.
    public var segmentDuration: Double?

    /// Options as given (`container` nil when the job names none); `validated()` checks them.
    public init(
        container: String? = nil, encryption: String = "sample-aes", keyPeriod: Int? = nil, watermark: String? = nil,
        segmentDuration: Double? = nil
    ) {
        self.container = container ?? "ts"
        containerIsDefault = container == nil
        self.encryption = encryption
        self.keyPeriod = keyPeriod
        self.watermark = watermark
        self.segmentDuration = segmentDuration
    }

    /// The options, or a 422 naming the field that is not acceptable: an unknown container or encryption,
    /// `cenc` outside fMP4, a key period outside 1…100000 or without encryption, a watermark other than
    /// `ab`, a segment duration outside 1…60 seconds.
    public func validated() throws(GatewayError) -> PackagingJobOptions {
        guard Self.containers.contains(container) else {
            throw GatewayError(.invalid, code: "invalid-container", detail: "container must be ts or fmp4.")
        }
        guard Self.encryptions.contains(encryption) else {
            throw GatewayError(
                .invalid, code: "invalid-encryption", detail: "encryption must be sample-aes, cenc, aes-128 or none.")
        }
        if encryption == "cenc" && container != "fmp4" {
            throw GatewayError(
                .invalid, code: "invalid-encryption",
                detail: "cenc encryption needs container fmp4: MPEG-TS has no CENC.")
        }
        if let keyPeriod {
            guard (1...Self.keyPeriodLimit).contains(keyPeriod) else {
                throw GatewayError(
                    .invalid, code: "invalid-key-period",
                    detail: "keyPeriod must be a whole number of segments from 1 to \(Self.keyPeriodLimit).")
            }
            guard encryption != "none" else {
                throw GatewayError(
                    .invalid, code: "invalid-key-period", detail: "keyPeriod rotates keys: it needs encryption.")
            }
        }
        if let watermark, !Self.watermarks.contains(watermark) {
            throw GatewayError(
                .invalid, code: "invalid-watermark",
                detail: "watermark must be ab (two variants of each video segment, chosen per session).")
        }
        if let segmentDuration, !Self.segmentDurations.contains(segmentDuration) {
            throw GatewayError(
                .invalid, code: "invalid-segment-duration", detail: "segmentDuration must be from 1 to 60 seconds.")
        }
        return self
    }

    /// The stored form: `container=C ` when one was named, `encryption=E`, ` keyPeriod=N` when keys
    /// rotate, ` watermark=ab` when marked and ` segmentDuration=S` when one was named. A job stored
    /// before the last two existed reads back as it was.
    public var stored: String {
        (containerIsDefault ? "" : "container=\(container) ") + "encryption=\(encryption)"
            + (keyPeriod.map { " keyPeriod=\($0)" } ?? "") + (watermark.map { " watermark=\($0)" } ?? "")
            + (segmentDuration.map { " segmentDuration=\($0)" } ?? "")
    }

    /// The options a stored line names; nil (a job from before options were stored) is the defaults.
    public init(stored: String?) {
        self.init()
        for field in (stored ?? "").split(separator: " ") {
            let parts = field.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "container":
                container = parts[1]
                containerIsDefault = false
            case "encryption": encryption = parts[1]
            case "keyPeriod": keyPeriod = Int(parts[1])
            case "watermark": watermark = parts[1]
            case "segmentDuration": segmentDuration = Double(parts[1])
            default: continue
            }
        }
    }
}
