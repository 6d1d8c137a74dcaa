import ProcessTestSupport
import Protection
import Testing

/// Packed rgb24 pixels with a row stride larger than the picture, as FFmpeg frames have.
private struct RGBPicture {
    let width: Int
    let height: Int
    let stride: Int
    var bytes: [UInt8]

    init(width: Int, height: Int, pixel: (Int, Int) -> UInt8) {
        self.width = width
        self.height = height
        stride = width * 3 + 16
        bytes = [UInt8](repeating: 0xEE, count: stride * height)
        for row in 0..<height {
            for column in 0..<width {
                for component in 0..<3 { bytes[row * stride + column * 3 + component] = pixel(column, row) }
            }
        }
    }

    func value(_ column: Int, _ row: Int, _ component: Int = 0) -> UInt8 {
        bytes[row * stride + column * 3 + component]
    }

    mutating func withPlane<R>(_ body: (MaskPlane) -> R) -> R {
        let (stride, width, height) = (stride, width, height)
        return bytes.withUnsafeMutableBufferPointer {
            body(MaskPlane(base: $0.baseAddress!, stride: stride, width: width * 3, height: height))
        }
    }
}

private func rendered(
    _ source: RGBPicture, rectangle: FlickerRectangle, mask: FlickerMask, phase: FlickerPhase
) -> RGBPicture {
    var input = source
    var output = RGBPicture(width: source.width, height: source.height) { _, _ in 0x55 }
    input.withPlane { from in
        output.withPlane { to in
            FlickerCompositor.render(from, into: to, rectangle: rectangle, mask: mask, phase: phase)
        }
    }
    return output
}

/// A picture with every code value in it: a ramp across and a QR-like block pattern down.
private let ramp = RGBPicture(width: 96, height: 64) { column, row in
    UInt8(truncatingIfNeeded: (column * 8 + row * 3) % 256)
}

@Suite struct FlickerTests {
    @Test func theTwoPhasesPartitionTheRegionsPixels() {
        var generator = SplitMix(seed: 1)
        let rectangle = FlickerArea.region(x: 10, y: 5, width: 70, height: 50).rectangle(inWidth: 96, height: 64)!
        let mask = FlickerMask(width: rectangle.width, height: rectangle.height, using: &generator)
        let white = RGBPicture(width: 96, height: 64) { _, _ in 100 }
        let first = rendered(white, rectangle: rectangle, mask: mask, phase: .first)
        let second = rendered(white, rectangle: rectangle, mask: mask, phase: .second)
        var drawnInFirst = 0
        for row in 0..<64 {
            for column in 0..<96 {
                let inside =
                    column >= 10 && column < 80 && row >= 5 && row < 55
                for component in 0..<3 {
                    let (a, b) = (first.value(column, row, component), second.value(column, row, component))
                    if inside {
                        // Exactly one phase draws it, the other shows the black background.
                        #expect((a == 0) != (b == 0), "pixel \(column),\(row) drawn in both or neither")
                    } else {
                        #expect(a == 100 && b == 100, "pixel \(column),\(row) outside the region changed")
                    }
                }
                if inside && first.value(column, row) != 0 { drawnInFirst += 1 }
            }
        }
        // About half of the region in each phase (3 500 pixels: 0.5 ± 0.05 is over 5 standard deviations).
        let fraction = Double(drawnInFirst) / Double(70 * 50)
        #expect(abs(fraction - 0.5) < 0.05, "first phase draws \(fraction) of the region")
    }

    @Test func everyPairDrawsANewSplitNotAFixedPattern() {
        var generator = SplitMix(seed: 7)
        let masks = (0..<3).map { _ in FlickerMask(width: 64, height: 64, using: &generator) }
        func agreement(_ a: FlickerMask, _ b: FlickerMask) -> Double {
            var same = 0
            for row in 0..<64 {
                for column in 0..<64
                where a.isDrawn(column: column, row: row, in: .first) == b.isDrawn(column: column, row: row, in: .first)
                {
                    same += 1
                }
            }
            return Double(same) / 4096
        }
        // Independent splits agree on about half the pixels; a fixed pattern would agree on all of them,
        // a checkerboard and its shift on none.
        #expect(abs(agreement(masks[0], masks[1]) - 0.5) < 0.05)
        #expect(abs(agreement(masks[1], masks[2]) - 0.5) < 0.05)
        // Neither a checkerboard: about half of the horizontal neighbours share a phase.
        var neighboursAlike = 0
        for row in 0..<64 {
            for column in 0..<63
            where masks[0].isDrawn(column: column, row: row, in: .first)
                == masks[0].isDrawn(column: column + 1, row: row, in: .first)
            {
                neighboursAlike += 1
            }
        }
        #expect(abs(Double(neighboursAlike) / Double(64 * 63) - 0.5) < 0.05)
    }

    @Test func thePairAveragesToThePictureInLinearLightWhereThereIsHeadroom() {
        var generator = SplitMix(seed: 3)
        let rectangle = FlickerArea.picture.rectangle(inWidth: 96, height: 64)!
        let mask = FlickerMask(width: 96, height: 64, using: &generator)
        let first = rendered(ramp, rectangle: rectangle, mask: mask, phase: .first)
        let second = rendered(ramp, rectangle: rectangle, mask: mask, phase: .second)
        for row in 0..<64 {
            for column in 0..<96 {
                let source = ramp.value(column, row)
                let mean =
                    (FlickerCompositor.linear(first.value(column, row))
                        + FlickerCompositor.linear(second.value(column, row)))
                    / 2
                let original = FlickerCompositor.linear(source)
                if original <= 0.5 {
                    // Headroom: the pair restores the original's light, to within the 8-bit rounding of the
                    // drawn value (half a code step at twice the level).
                    let step = FlickerCompositor.linear(min(255, source + 1)) - original
                    #expect(abs(mean - original) <= step, "value \(source): mean \(mean) vs \(original)")
                } else {
                    // No headroom: the drawn phase is full scale and the pair averages to half of it.
                    #expect(abs(mean - 0.5) < 1e-9, "value \(source): mean \(mean), expected 0.5")
                }
                #expect(FlickerCompositor.expectedAverage(source) == FlickerCompositor.code(min(original, 0.5)))
            }
        }
    }

    @Test func theTransferFunctionsAreSRGB() {
        #expect(FlickerCompositor.linear(0) == 0)
        #expect(FlickerCompositor.linear(255) == 1)
        // sRGB 188 is about 0.5 linear (0.5029), 128 about 0.2158.
        #expect(abs(FlickerCompositor.linear(188) - 0.5029) < 0.0005)
        #expect(abs(FlickerCompositor.linear(128) - 0.2158) < 0.0005)
        for value in 0...255 { #expect(FlickerCompositor.code(FlickerCompositor.linear(UInt8(value))) == value) }
        #expect(FlickerCompositor.drawn[255] == 255)
        #expect(FlickerCompositor.drawn[0] == 0)
    }

    @Test(arguments: [
        ("0,0,10,10", FlickerArea.region(x: 0, y: 0, width: 10, height: 10)),
        ("24,24,272,272", FlickerArea.region(x: 24, y: 24, width: 272, height: 272)),
    ])
    func regionsParse(text: String, area: FlickerArea) {
        #expect(FlickerArea(parsing: text) == area)
    }

    @Test(arguments: ["", "1,2,3", "1,2,3,4,5", "-1,0,4,4", "0,0,0,4", "a,b,c,d", "0,0,4,", "0,0,100000,4"])
    func badRegionsAreRefused(text: String) {
        #expect(FlickerArea(parsing: text) == nil)
    }

    @Test func aRegionIsClippedToThePicture() {
        let area = FlickerArea.region(x: 300, y: 10, width: 100, height: 400)
        #expect(area.rectangle(inWidth: 320, height: 320) == FlickerRectangle(x: 300, y: 10, width: 20, height: 310))
        #expect(FlickerArea.region(x: 320, y: 0, width: 5, height: 5).rectangle(inWidth: 320, height: 320) == nil)
    }
}
