// swift-tools-version:6.0
// GuardPlay: one executable, `guard-play`, over layered targets. Arrows point down only:
// CLI → ControlAPI/HTTPServer, Gateway/Store, Player/Protection/CaptureMonitor, Packager/Crypto, MediaCore;
// MediaFormats (byte formats, no FFmpeg) sits under Packager, Player and Gateway.
// Each C library has exactly one Swift importer.
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("InternalImportsByDefault")]

let package = Package(
    name: "GuardPlay",
    products: [
        .executable(name: "guard-play", targets: ["GuardPlayCLI"]),
        // The fuzz targets' entry points, for the libFuzzer package in fuzz/ (docs/FUZZING.md).
        .library(name: "FuzzTargets", targets: ["FuzzTargets"]),
        .executable(name: "fuzz-replay", targets: ["FuzzReplay"]),
    ],
    targets: [
        // C system libraries: a modulemap, a shim header and explicit link lines each.
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat"),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto"),
        .systemLibrary(name: "CSDL2"),  // headers at <SDL2/SDL.h>; sdl2.pc adds a -D flag SwiftPM rejects
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd"),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3"),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq"),

        // Bridges: owners of C objects.
        // What FoundationEssentials lacks, on the C library: path names, trimming, C formats, JSON, threads,
        // locks, files and child processes. Product modules import FoundationEssentials, never Foundation,
        // whose ICU and internationalisation libraries cost every command ~6.7 MiB of resident memory.
        .target(name: "SystemSupport", swiftSettings: strict),
        .target(name: "MediaCore", dependencies: ["CFFmpeg", "SystemSupport"], swiftSettings: strict),
        .target(name: "Crypto", dependencies: ["COpenSSL"], swiftSettings: strict),
        // A periodic thread of its own, for blocking work kept off the cooperative pool.
        .target(name: "ThreadSupport", dependencies: ["SystemSupport"], swiftSettings: strict),

        // Domain cores: no sockets, devices or clocks of their own.
        .target(name: "CaptureMonitor", swiftSettings: strict),
        // Linux capture detectors (process scan, PipeWire, session type, screenshot folders), each a
        // live source for the monitor.
        .target(
            name: "CaptureDetectors", dependencies: ["CaptureMonitor", "ThreadSupport", "SystemSupport"],
            swiftSettings: strict),
        .target(name: "Protection", swiftSettings: strict),
        // Byte formats in and out (bit reader/writer, NAL units, H.264, AAC, AC-3, TS, SAMPLE-AES, HLS
        // playlists): no FFmpeg, so their tests run without it.
        .target(name: "MediaFormats", dependencies: ["Crypto", "SystemSupport"], swiftSettings: strict),
        // Protection's flicker phases make `package STILL --flicker`.
        .target(
            name: "Packager", dependencies: ["MediaFormats", "MediaCore", "Crypto", "Protection", "SystemSupport"],
            swiftSettings: strict
        ),
        .target(
            name: "Player",
            dependencies: ["MediaFormats", "MediaCore", "Protection", "CaptureMonitor", "CSDL2", "SystemSupport"],
            swiftSettings: strict),

        // Service.
        .target(name: "Store", dependencies: ["CSQLite", "CLibPQ", "Crypto", "SystemSupport"], swiftSettings: strict),
        .target(
            name: "HTTPServer", dependencies: ["CMicroHTTPD", "ThreadSupport", "SystemSupport"], swiftSettings: strict),
        .target(
            name: "Gateway",
            dependencies: [
                "Store", "Packager", "MediaFormats", "MediaCore", "Crypto", "CaptureMonitor", "ThreadSupport",
                "SystemSupport",
            ],
            swiftSettings: strict),
        .target(
            name: "ControlAPI",
            dependencies: [
                "HTTPServer", "Gateway", "Store", "Crypto", "CaptureMonitor", "SystemSupport", "MediaFormats",
            ],
            swiftSettings: strict),

        .executableTarget(
            name: "GuardPlayCLI",
            dependencies: [
                "ControlAPI", "Gateway", "Store", "HTTPServer", "Player", "Packager", "CaptureMonitor",
                "CaptureDetectors", "MediaCore", "SystemSupport", "ThreadSupport",
            ],
            swiftSettings: strict),

        // Fuzzing: one entry point per parser of untrusted bytes, built plain here (and with libFuzzer and
        // ASan by fuzz/Package.swift), and `fuzz-replay`, which runs committed inputs through them.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "ControlAPI", "HTTPServer", "Gateway", "CaptureDetectors", "MediaFormats", "Crypto", "SystemSupport",
            ],
            swiftSettings: strict),
        .executableTarget(name: "FuzzReplay", dependencies: ["FuzzTargets"], swiftSettings: strict),
        // bench/slice-parse.sh: the slice-header parse of every VCL NAL unit of an H.264 or HEVC stream, timed.
        .executableTarget(name: "SliceParseBench", dependencies: ["MediaFormats"], swiftSettings: strict),

        .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore"]),
        .testTarget(name: "ThreadSupportTests", dependencies: ["ThreadSupport"]),
        .testTarget(name: "SystemSupportTests", dependencies: ["SystemSupport"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"], exclude: ["vectors.json"]),
        .testTarget(name: "CaptureMonitorTests", dependencies: ["CaptureMonitor"]),
        .testTarget(
            name: "CaptureDetectorsTests", dependencies: ["CaptureDetectors", "CaptureMonitor", "ProcessTestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(name: "ProtectionTests", dependencies: ["Protection", "ProcessTestSupport"]),
        .testTarget(name: "PlayerTests", dependencies: ["Player", "MediaCore", "CaptureMonitor"]),
        .testTarget(
            name: "MediaFormatsTests",
            dependencies: ["MediaFormats", "Crypto", "ProcessTestSupport", "FormatTestSupport"]),
        .testTarget(
            name: "PackagerTests",
            dependencies: ["Packager", "MediaFormats", "MediaCore", "Crypto", "FormatTestSupport"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "Crypto", "PostgresTestSupport"]),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "HTTPTestSupport", "ProcessTestSupport", "TestProcessSetup"]),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "ControlAPI", "HTTPServer", "Store", "CaptureMonitor", "HTTPTestSupport",
                "PostgresTestSupport", "ProcessTestSupport",
            ]),
        // Runs the built `guard-play` binary and checks what it writes with MediaCore; starts real X servers,
        // sound servers and recorders for the capture-detection acceptance tests.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "MediaCore", "CaptureDetectors", "ProcessTestSupport", "HTTPTestSupport", "Crypto",
                "PostgresTestSupport", "MediaFormats", "Packager",
            ]),
        // Replays fuzz/corpus and fuzz/regressions through every target on each `make test`.
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzTargets", "ProcessTestSupport"]),
        // Starting and ending child processes and their process groups, and a seeded generator, shared by the
        // test targets.
        .target(name: "ProcessTestSupport", dependencies: ["TestProcessSetup"], path: "Tests/ProcessTestSupport"),
        // C, so that a constructor runs before any test: the test process catches SIGPIPE.
        .target(name: "TestProcessSetup", path: "Tests/TestProcessSetup"),
        // A raw HTTP/1.1 client for tests that must send exactly the bytes they mean.
        .target(name: "HTTPTestSupport", path: "Tests/HTTPTestSupport"),
        // A throwaway PostgreSQL cluster (initdb, pg_ctl) per test process, a database per test.
        // A plain reference for the SAMPLE-AES and cbcs ciphers, shared by the format and packager tests.
        .target(name: "FormatTestSupport", dependencies: ["MediaFormats", "Crypto"], path: "Tests/FormatTestSupport"),
        .target(name: "PostgresTestSupport", dependencies: ["ProcessTestSupport"], path: "Tests/PostgresTestSupport"),
    ]
)
