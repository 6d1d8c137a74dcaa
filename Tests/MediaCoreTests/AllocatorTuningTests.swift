import Foundation
import MediaCore
import Testing

/// A fixed mmap threshold: once a large block was freed, a block over 128 KiB but smaller than it is
/// still a mapping of its own, not carved from the heap (glibc would have raised its threshold).
@Suite(.serialized) struct AllocatorTuningTests {
    /// The address range of the `[heap]` mapping.
    private func heap() throws -> ClosedRange<UInt> {
        let maps = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        let line = try #require(maps.split(separator: "\n").first { $0.hasSuffix("[heap]") })
        let bounds = line.split(separator: " ")[0].split(separator: "-").map { UInt($0, radix: 16)! }
        return bounds[0]...bounds[1]
    }

    @Test func largeBlocksStayMappingsAfterALargerOneIsFreed() throws {
        AllocatorTuning.fixMmapThreshold()
        let big = UnsafeMutableRawPointer.allocate(byteCount: 8 << 20, alignment: 16)
        big.initializeMemory(as: UInt8.self, repeating: 1, count: 8 << 20)
        big.deallocate()
        var blocks: [UnsafeMutableRawPointer] = []
        defer { for block in blocks { block.deallocate() } }
        for _ in 0..<8 { blocks.append(UnsafeMutableRawPointer.allocate(byteCount: 512 << 10, alignment: 16)) }
        let range = try heap()
        for block in blocks {
            #expect(!range.contains(UInt(bitPattern: block)), "a 512 KiB block came from the heap")
        }
    }
}
