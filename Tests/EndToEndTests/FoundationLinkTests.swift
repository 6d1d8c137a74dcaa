import Foundation
import Testing

/// The product links FoundationEssentials only: Foundation's own library, its ICU data and its
/// internationalisation library cost every `guard-play` command about 6.7 MiB of resident memory, so no
/// product module may `import Foundation` (docs/ARCHITECTURE.md). The normal (dynamic) build is checked;
/// the dist build links the Swift libraries statically.
@Suite struct FoundationLinkTests {
    static let refused = ["libFoundation.so", "lib_FoundationICU.so", "libFoundationInternationalization.so"]

    @Test func binaryNeedsNoFoundationLibrary() throws {
        let dynamic = try run("/usr/bin/readelf", ["-d", guardPlayBinary])
        #expect(dynamic.status == 0, "\(dynamic.stderr)")
        let needed = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            line.split(separator: "[").last?.split(separator: "]").first.map(String.init)
        }
        #expect(needed.contains("libFoundationEssentials.so"), "NEEDED: \(needed)")
        for library in Self.refused {
            #expect(!needed.contains(library), "guard-play needs \(library): a product module imports Foundation")
        }
    }

    @Test func noFoundationLibraryIsLoadedThroughAnother() throws {
        let resolved = try run("/usr/bin/ldd", [guardPlayBinary])
        #expect(resolved.status == 0, "\(resolved.stderr)")
        let names = resolved.stdout.split(separator: "\n").compactMap {
            $0.split(separator: " ").first.map(String.init)
        }
        .map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(names.contains("libFoundationEssentials.so"), "ldd: \(names)")
        for library in Self.refused {
            #expect(!names.contains(library), "guard-play loads \(library)")
        }
    }
}
