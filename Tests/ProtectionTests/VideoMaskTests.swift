import Protection
import Testing

/// A plain 8-bit plane in an array, with a stride wider than its width to catch stride mistakes.
private final class TestPlane {
    var bytes: [UInt8]
    let width: Int
    let height: Int
    let stride: Int

    init(width: Int, height: Int, fill: (Int, Int) -> UInt8) {
        self.width = width
        self.height = height
        stride = width + 13
        bytes = [UInt8](repeating: 0xEE, count: stride * height)
        for y in 0..<height { for x in 0..<width { bytes[y * stride + x] = fill(x, y) } }
    }

    subscript(x: Int, y: Int) -> UInt8 { bytes[y * stride + x] }

    func withPlane<R>(_ body: (MaskPlane) -> R) -> R {
        bytes.withUnsafeMutableBufferPointer {
            body(MaskPlane(base: $0.baseAddress!, stride: stride, width: width, height: height))
        }
    }
}

private func withPlanes<R>(_ planes: [TestPlane], _ body: ([MaskPlane]) -> R) -> R {
    func nest(_ index: Int, _ acquired: [MaskPlane]) -> R {
        if index == planes.count { return body(acquired) }
        return planes[index].withPlane { nest(index + 1, acquired + [$0]) }
    }
    return nest(0, [])
}

private let yuv420 = MaskPictureFormat(log2ChromaWidth: 1, log2ChromaHeight: 1, isFullRange: false)

/// A QR-like pattern: 8-pixel modules of black and white.
private func qrLike(width: Int, height: Int) -> [TestPlane] {
    [
        TestPlane(width: width, height: height) { x, y in ((x / 8) * 7 + (y / 8) * 13) % 3 == 0 ? 16 : 235 },
        TestPlane(width: width / 2, height: height / 2) { x, y in UInt8(100 + (x + y) % 50) },
        TestPlane(width: width / 2, height: height / 2) { x, y in UInt8(120 + (x * y) % 30) },
    ]
}

@Suite struct VideoMaskTests {
    @Test func blackFillsLimitedAndFullRangeBlack() {
        for fullRange in [false, true] {
            let planes = qrLike(width: 64, height: 48)
            withPlanes(planes) {
                VideoMask.fillBlack(
                    $0, format: MaskPictureFormat(log2ChromaWidth: 1, log2ChromaHeight: 1, isFullRange: fullRange))
            }
            for y in 0..<48 { for x in 0..<64 { #expect(planes[0][x, y] == (fullRange ? 0 : 16)) } }
            for plane in planes[1...] { for y in 0..<24 { for x in 0..<32 { #expect(plane[x, y] == 128) } } }
            // Padding beyond the width is not touched.
            #expect(planes[0].bytes[64] == 0xEE)
        }
    }

    @Test func blockSizeIsCoarse() {
        for height in [120, 240, 360, 720, 1080, 2160] {
            let block = VideoMask.blockSize(forHeight: height)
            #expect(block * 12 >= height && block >= 16 && block % 2 == 0)
        }
    }

    @Test func pixelateFillsEachBlockWithItsQuantisedMean() {
        let width = 320
        let height = 240
        // QR-like modules whose two levels drift across the picture, so blocks have different means.
        let source = [
            TestPlane(width: width, height: height) { x, y in
                ((x / 8) * 7 + (y / 8) * 13) % 3 == 0 ? UInt8(16 + x / 4) : UInt8(235 - y / 2)
            },
            TestPlane(width: width / 2, height: height / 2) { x, y in UInt8(60 + x + (x + y) % 20) },
            TestPlane(width: width / 2, height: height / 2) { x, y in UInt8(200 - y - (x * y) % 30) },
        ]
        let destination = source.map { plane in TestPlane(width: plane.width, height: plane.height) { _, _ in 0 } }
        withPlanes(source) { sourcePlanes in
            withPlanes(destination) { destinationPlanes in
                VideoMask.pixelate(sourcePlanes, into: destinationPlanes, format: yuv420, lumaHeight: height)
            }
        }
        let block = VideoMask.blockSize(forHeight: height)
        let step = VideoMask.quantisationStep
        for (index, (original, plane)) in zip(source, destination).enumerated() {
            let edge = index == 0 ? block : block / 2
            var levels = Set<UInt8>()
            for top in stride(from: 0, to: plane.height, by: edge) {
                for left in stride(from: 0, to: plane.width, by: edge) {
                    let rows = top..<min(top + edge, plane.height)
                    let columns = left..<min(left + edge, plane.width)
                    // The mean of the source block, worked out here from the source plane.
                    var sum = 0
                    for y in rows { for x in columns { sum += Int(original[x, y]) } }
                    let mean = Double(sum) / Double(rows.count * columns.count)
                    let value = plane[left, top]
                    levels.insert(value)
                    // One of 8 levels, the one whose step holds the mean...
                    #expect(Int(value) % step == step / 2, "plane \(index) block at \(left),\(top): \(value)")
                    #expect(abs(Double(value) - mean) <= Double(step) / 2, "plane \(index) block at \(left),\(top)")
                    // ...over the whole block.
                    for y in rows {
                        for x in columns where plane[x, y] != value {
                            Issue.record("plane \(index) pixel \(x),\(y) is \(plane[x, y]), its block \(value)")
                        }
                    }
                }
            }
            #expect(levels.count > 1, "plane \(index) is one flat level: \(levels)")
        }
        // Padding beyond the width is not touched.
        #expect(destination[0].bytes[width] == 0xEE)
    }

    @Test func imageCopyReplacesEveryPixel() {
        let target = qrLike(width: 32, height: 16)
        let image = [
            TestPlane(width: 32, height: 16) { _, _ in 77 }, TestPlane(width: 16, height: 8) { _, _ in 88 },
            TestPlane(width: 16, height: 8) { _, _ in 99 },
        ]
        withPlanes(image) { imagePlanes in withPlanes(target) { VideoMask.copy(imagePlanes, into: $0) } }
        for y in 0..<16 { for x in 0..<32 { #expect(target[0][x, y] == 77) } }
        for y in 0..<8 { for x in 0..<16 { #expect(target[1][x, y] == 88 && target[2][x, y] == 99) } }
    }

    @Test func maskStyleParses() {
        #expect(MaskStyle(parsing: "black") == .black)
        #expect(MaskStyle(parsing: "pixelate") == .pixelate)
        #expect(MaskStyle(parsing: "image:/tmp/x.png") == .image(path: "/tmp/x.png"))
        #expect(MaskStyle(parsing: "image:") == nil)
        #expect(MaskStyle(parsing: "blur") == nil)
    }
}
