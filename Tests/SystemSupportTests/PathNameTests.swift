import Foundation
import SystemSupport
import Testing

/// The stand-ins give exactly what the Foundation calls they replace gave, on the inputs the product passes.
@Suite struct PathNameTests {
    static let paths = [
        // Not "a", "a/" (this toolchain's Foundation traps on them: the stand-in gives ""), "a//b" or "//".
        "/a/b", "/a/b/", "/a", "/", "a/b", "/a/b.c", "", "./x.tar.gz", ".profile", "/d/.hidden",
        "dir.d/file", "file.", "/tmp/out", "../up/x.m3u8", "/x/y.d/", "x/.a.b",
    ]

    @Test func pathComponentsMatchNSString() {
        for path in Self.paths {
            let ns = path as NSString
            #expect(path.lastPathComponent == ns.lastPathComponent, "\(path)")
            #expect(path.deletingLastPathComponent == ns.deletingLastPathComponent, "\(path)")
            #expect(path.pathExtension == ns.pathExtension, "\(path)")
            #expect(path.deletingPathExtension == ns.deletingPathExtension, "\(path)")
            #expect(path.appendingPathComponent("guardplay.db") == ns.appendingPathComponent("guardplay.db"), "\(path)")
        }
    }

    @Test func trimmingMatchesCharacterSets() {
        let texts = [
            "  a b \t", "\n\r\nx\n", "\u{A0}y\u{2003}", "\u{85}z\u{2028}", "", " ", "\t\n", "inner  space",
            "\"quoted\"", "é ",
        ]
        for text in texts {
            #expect(text.trimmingSpaces() == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
            #expect(text.trimmingLineBreaks() == text.trimmingCharacters(in: .newlines), "\(text.debugDescription)")
            #expect(
                text.trimmingSpacesAndLineBreaks() == text.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(text.debugDescription)")
            #expect(
                text.trimmingScalars { $0 == "\"" } == text.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        }
    }

    @Test func cFormatMatchesStringFormat() {
        let values: [Double] = [0, 0.0005, 0.001, 1.0005, 2.5, -3.14159, 600.333_333, 1e-7, 123_456.789, 0.05, 0.15]
        for format in ["%.3f", "%.1f", "%6.1f", "%.2f", "%.6f", "%.4f", "%.1e", "PT%.3fS"] {
            for value in values {
                #expect(String(cFormat: format, value) == String(format: format, value), "\(format) \(value)")
            }
        }
        #expect(String(cFormat: "\\u%04x", UInt32(0x1F)) == String(format: "\\u%04x", UInt32(0x1F)))
        #expect(
            String(cFormat: "scale %.4f×%.4f offset (%.1f, %.1f)", 1.5, 2.0, -3.25, 4.0)
                == String(format: "scale %.4f×%.4f offset (%.1f, %.1f)", 1.5, 2.0, -3.25, 4.0))
        let long = String(repeating: "x", count: 300) + "%.1f"
        #expect(String(cFormat: long, 1.25) == String(format: long, 1.25))
    }
}
