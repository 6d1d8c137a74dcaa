// swift-tools-version:6.0
// GuardPlay's libFuzzer executables: one per fuzz target, each a LLVMFuzzerTestOneInput over the entry
// point of the same name in the root package's FuzzTargets library. Built only with
// `swift build -c release --sanitize=fuzzer --sanitize=address` (`make fuzz`); see docs/FUZZING.md.
import PackageDescription

/// Target name (as `FuzzTarget`'s raw value) and the executable's module.
let fuzzers: [(name: String, module: String)] = [
    ("json", "FuzzJSON"), ("request-bodies", "FuzzRequestBodies"), ("http", "FuzzHTTP"),
    ("recorder-rules", "FuzzRecorderRules"), ("transport-stream", "FuzzTransportStream"), ("h264", "FuzzH264"),
    ("hevc", "FuzzHEVC"), ("audio", "FuzzAudio"), ("playlist", "FuzzPlaylist"), ("cmaf", "FuzzCMAF"),
    ("config", "FuzzConfig"), ("cmaf-verify", "FuzzCMAFVerify"), ("mpd", "FuzzMPD"),
    ("mpd-round-trip", "FuzzMPDRoundTrip"),
    ("package-verify", "FuzzPackageVerify"),
]

let package = Package(
    name: "GuardPlayFuzz",
    products: fuzzers.map { .executable(name: "fuzz-\($0.name)", targets: [$0.module]) },
    dependencies: [.package(name: "GuardPlay", path: "..")],
    targets: fuzzers.map {
        .executableTarget(
            name: $0.module, dependencies: [.product(name: "FuzzTargets", package: "GuardPlay")],
            path: "Sources/\($0.name)")
    }
)
