/// One plane of a picture as plain memory: `height` rows of `width` bytes, `stride` bytes apart. Valid only
/// for the duration of the call it is passed to.
public struct MaskPlane {
    /// The first byte of the plane.
    public let base: UnsafeMutablePointer<UInt8>
    /// Bytes from one row to the next.
    public let stride: Int
    /// Bytes of picture in a row.
    public let width: Int
    /// Rows in the plane.
    public let height: Int

    /// Creates a plane view.
    public init(base: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, height: Int) {
        self.base = base
        self.stride = stride
        self.width = width
        self.height = height
    }

    /// Row `row` as a buffer of `width` bytes.
    public func row(_ row: Int) -> UnsafeMutableBufferPointer<UInt8> {
        UnsafeMutableBufferPointer(start: base + row * stride, count: width)
    }
}

/// The shape of a planar 8-bit YUV (or gray) picture, as the mask needs it.
public struct MaskPictureFormat: Sendable, Hashable {
    /// log2 of the horizontal chroma subsampling.
    public var log2ChromaWidth: Int
    /// log2 of the vertical chroma subsampling.
    public var log2ChromaHeight: Int
    /// True when luma spans 0–255 (JPEG range) rather than 16–235.
    public var isFullRange: Bool

    /// Creates a format description.
    public init(log2ChromaWidth: Int, log2ChromaHeight: Int, isFullRange: Bool) {
        self.log2ChromaWidth = log2ChromaWidth
        self.log2ChromaHeight = log2ChromaHeight
        self.isFullRange = isFullRange
    }
}

/// How a masked frame looks: `--mask black|pixelate|image:PATH`.
public enum MaskStyle: Sendable, Hashable, CustomStringConvertible {
    /// Black (limited- or full-range black, neutral chroma).
    case black
    /// Coarse blocks with quantised colours: nothing finer than `VideoMask.blockSize(forHeight:)` survives.
    case pixelate
    /// A still image supplied by the user, scaled to the picture.
    case image(path: String)

    /// Parses `black`, `pixelate` or `image:PATH`; nil for anything else.
    public init?(parsing text: String) {
        switch text {
        case "black": self = .black
        case "pixelate": self = .pixelate
        default:
            guard text.hasPrefix("image:"), text.count > "image:".count else { return nil }
            self = .image(path: String(text.dropFirst("image:".count)))
        }
    }

    public var description: String {
        switch self {
        case .black: "black"
        case .pixelate: "pixelate"
        case .image(let path): "image:\(path)"
        }
    }
}

/// Masks pictures so that nothing of the original can be recovered from them.
///
/// Masks are written into a separate destination, never over a decoder's frame, which decoders keep as a
/// reference for later frames.
public enum VideoMask {
    /// Quantisation step for pixelated block values: 8 levels per component.
    public static let quantisationStep = 32

    /// The luma block edge for pixelating a picture `height` rows high: at least 1/12 of the height (so a
    /// QR code or a line of text spans only a few blocks), at least 16, and even so chroma blocks align.
    public static func blockSize(forHeight height: Int) -> Int {
        let size = max(16, (height + 11) / 12)
        return size + (size & 1)
    }

    /// Fills `planes` with black: luma 16 (or 0 at full range), chroma 128, alpha (a fourth plane) 255.
    public static func fillBlack(_ planes: [MaskPlane], format: MaskPictureFormat) {
        for (index, plane) in planes.enumerated() {
            let value: UInt8 =
                switch index {
                case 0: format.isFullRange ? 0 : 16
                case 1, 2: 128
                default: 255
                }
            for row in 0..<plane.height { plane.row(row).update(repeating: value) }
        }
    }

    /// Writes a pixelated copy of `source` into `destination` (same geometry): each block holds the
    /// quantised mean of the source block, so detail smaller than a block and small differences of level
    /// are gone.
    public static func pixelate(
        _ source: [MaskPlane], into destination: [MaskPlane], format: MaskPictureFormat, lumaHeight: Int
    ) {
        precondition(source.count == destination.count, "pixelate needs matching planes")
        let lumaBlock = blockSize(forHeight: lumaHeight)
        for index in source.indices {
            let chroma = index == 1 || index == 2
            let blockWidth = chroma ? max(1, lumaBlock >> format.log2ChromaWidth) : lumaBlock
            let blockHeight = chroma ? max(1, lumaBlock >> format.log2ChromaHeight) : lumaBlock
            pixelatePlane(source[index], into: destination[index], blockWidth: blockWidth, blockHeight: blockHeight)
        }
    }

    private static func pixelatePlane(
        _ source: MaskPlane, into destination: MaskPlane, blockWidth: Int, blockHeight: Int
    ) {
        let step = quantisationStep
        var top = 0
        while top < source.height {
            let bottom = min(top + blockHeight, source.height)
            var left = 0
            while left < source.width {
                let right = min(left + blockWidth, source.width)
                var sum = 0
                for row in top..<bottom {
                    let line = source.row(row)
                    for column in left..<right { sum += Int(line[column]) }
                }
                let mean = sum / ((bottom - top) * (right - left))
                let value = UInt8(min(255, (mean / step) * step + step / 2))
                for row in top..<bottom {
                    UnsafeMutableBufferPointer(rebasing: destination.row(row)[left..<right]).update(repeating: value)
                }
                left = right
            }
            top = bottom
        }
    }

    /// Copies `image` (already scaled to the picture's geometry and format) into `destination`.
    public static func copy(_ image: [MaskPlane], into destination: [MaskPlane]) {
        for (source, target) in zip(image, destination) {
            for row in 0..<min(source.height, target.height) {
                let count = min(source.width, target.width)
                target.row(row).baseAddress!.update(from: source.row(row).baseAddress!, count: count)
            }
        }
    }
}
