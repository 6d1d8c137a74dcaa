/// The fuzz targets: each feeds arbitrary bytes to exactly one parser of untrusted input and checks
/// what must hold whatever the bytes are. A parser refuses bad input by throwing its typed error; a
/// trap, a hang or an unbounded allocation is a finding. The libFuzzer executables under `fuzz/`
/// wrap `run`, and `fuzz-replay` (and `make test`, through `FuzzCorpusTests`) runs the committed
/// corpora and regression inputs through the same entry points without mutation.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// The control API's JSON parser (RFC 8259), and that what it parses serialises and parses back
    /// to the same value.
    case json
    /// Every REST request body type of the gateway and the player control server, from a JSON text.
    case requestBodies = "request-bodies"
    /// The HTTP hygiene layer without a socket: a raw request's head screened as the server screens
    /// it (target length, header count and names, `Host`, `Transfer-Encoding`/`Content-Length`), its
    /// body collected under the cap, `X-Forwarded-For` read, then routed by the player's control
    /// router (path and query grammar, bearer token, CORS, JSON bodies).
    case http
    /// The recorder-rules file (`recorders.conf`), and the classifier using what it read.
    case recorderRules = "recorder-rules"
    /// The MPEG-TS reader, then the SAMPLE-AES decryptor over each declared stream's PES payloads.
    case transportStream = "transport-stream"
    /// The H.264 readers: Annex-B NAL units, SPS, avcC and the CODECS string.
    case h264
    /// The HEVC readers: VPS, SPS, PPS and slice segment headers.
    case hevc
    /// The ADTS, AudioSpecificConfig, AC-3/E-AC-3 and ID3 (packed audio) readers.
    case audio
    /// The ISO BMFF box reader over nested boxes; then the same bytes as an H.264 access unit through the
    /// CMAF sample builder, the `senc` subsample map and a `cbcs` and `cenc` round trip (differential:
    /// decryption must give back the sample, and the clear bytes must stay clear).
    case cmaf
    /// The HLS media and master playlist parsers and the attribute-list parser, strict and lenient.
    case playlist
    /// The serve config file (`guard-play serve --config`), and the settings it read written back and
    /// read again to the same settings.
    case config
    /// The verifier's readers of the CMAF protection boxes: `tenc`, and `trun`, `senc`, `saiz`, `saio`
    /// of a fragment, each table checked to stay inside its box and agree with the others, then each
    /// sample decrypted with its record.
    case cmafVerify = "cmaf-verify"
    /// The DASH MPD reader (`ParsedDASHManifest`, with its XML subset parser) over arbitrary text.
    case mpd
    /// The DASH MPD writer's round trip: a manifest made from the input, written, read back, equal.
    case mpdRoundTrip = "mpd-round-trip"
    /// Differential: a random valid H.264 and AAC stream made from the input, packaged as TS SAMPLE-AES
    /// and as CMAF `cbcs` and `cenc`, then read back and decrypted by the verifier's readers, bit for bit.
    case packageVerify = "package-verify"
    /// Not a parser: traps on an input that starts with `CANARY`, so a test can show that a trapping
    /// input fails the replay (`FuzzCorpusTests`).
    case canary

    /// The targets that fuzz a parser, without `canary`.
    public static var parsers: [FuzzTarget] { allCases.filter { $0 != .canary } }

    /// Feeds `data` to the target's parser.
    public func run(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .json: JSONFuzzing.parse(data)
        case .requestBodies: JSONFuzzing.requestBodies(data)
        case .http: HTTPFuzzing.request(data)
        case .recorderRules: RecorderRulesFuzzing.parse(data)
        case .transportStream: MediaFuzzing.transportStream(data)
        case .h264: MediaFuzzing.h264(data)
        case .hevc: MediaFuzzing.hevc(data)
        case .audio: MediaFuzzing.audio(data)
        case .cmaf: CMAFFuzzing.cmaf(data)
        case .playlist: MediaFuzzing.playlist(data)
        case .config: ConfigFuzzing.parse(data)
        case .cmafVerify: CMAFVerifyFuzzing.verify(data)
        case .mpd: DASHFuzzing.read(data)
        case .mpdRoundTrip: DASHFuzzing.roundTrip(data)
        case .packageVerify: DifferentialFuzzing.packageThenVerify(data)
        case .canary:
            if data.starts(with: "CANARY".utf8) { fatalError("canary input: the replay must report this trap") }
        }
    }

    /// Feeds `bytes` to the target's parser.
    public func run(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { run($0) }
    }
}
