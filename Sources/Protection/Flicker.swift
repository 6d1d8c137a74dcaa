#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where `--flicker` applies: the whole picture, or a rectangle of it in picture pixels.
public enum FlickerArea: Sendable, Hashable, CustomStringConvertible {
    /// Every pixel of the picture.
    case picture
    /// The rectangle `x,y,w,h`; pixels outside it are drawn as usual.
    case region(x: Int, y: Int, width: Int, height: Int)

    /// Parses `x,y,w,h` (non-negative integers, width and height at least 1); nil for anything else.
    public init?(parsing text: String) {
        let fields = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
        guard fields.count == 4, let x = fields[0], let y = fields[1], let width = fields[2], let height = fields[3],
            x >= 0, y >= 0, width >= 1, height >= 1, width <= 1 << 16, height <= 1 << 16
        else { return nil }
        self = .region(x: x, y: y, width: width, height: height)
    }

    /// The rectangle inside a `width`×`height` picture, or nil when the region lies wholly outside it.
    public func rectangle(inWidth width: Int, height: Int) -> FlickerRectangle? {
        switch self {
        case .picture:
            return width > 0 && height > 0 ? FlickerRectangle(x: 0, y: 0, width: width, height: height) : nil
        case .region(let x, let y, let w, let h):
            guard x < width, y < height else { return nil }
            return FlickerRectangle(x: x, y: y, width: min(w, width - x), height: min(h, height - y))
        }
    }

    public var description: String {
        switch self {
        case .picture: "picture"
        case .region(let x, let y, let width, let height): "\(x),\(y),\(width),\(height)"
        }
    }
}

/// A rectangle of picture pixels, already clipped to the picture.
public struct FlickerRectangle: Sendable, Hashable {
    /// Left column.
    public let x: Int
    /// Top row.
    public let y: Int
    /// Columns.
    public let width: Int
    /// Rows.
    public let height: Int

    /// Creates a rectangle.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// One of the two phases of a pair: a pixel of the region is drawn in exactly one of them.
public enum FlickerPhase: Sendable, Hashable {
    case first, second

    /// The other phase.
    public var opposite: FlickerPhase { self == .first ? .second : .first }
}

/// The split of a region's pixels between the two phases of one pair: a random bit per pixel, drawn
/// fresh for every pair from a generator the caller gives (the system's, in the player), so no pair can
/// be known in advance. Bit set: drawn in the first phase; clear: drawn in the second.
public struct FlickerMask: Sendable {
    /// Columns and rows of the region it covers.
    public let width: Int
    public let height: Int
    private var words: [UInt64]

    /// Draws a new mask for a `width`×`height` region, 64 pixels per random word.
    public init(width: Int, height: Int, using generator: inout some RandomNumberGenerator) {
        self.width = width
        self.height = height
        let count = (width * height + 63) / 64
        words = (0..<count).map { _ in generator.next() }
    }

    /// True when the pixel at `column`, `row` of the region is drawn in `phase`.
    public func isDrawn(column: Int, row: Int, in phase: FlickerPhase) -> Bool {
        let index = row * width + column
        let bit = words[index >> 6] >> UInt64(index & 63) & 1 == 1
        return phase == .first ? bit : !bit
    }

    /// Calls `body` with the mask's bits, pixel `row * width + column` at bit `index & 63` of word
    /// `index >> 6`.
    func withWords<R>(_ body: (UnsafeBufferPointer<UInt64>) -> R) -> R { words.withUnsafeBufferPointer(body) }
}

/// Draws the phases of a flickering picture in packed 8-bit sRGB (`rgb24`): in a phase, a region pixel
/// is either drawn brightened or replaced by the black background, and the two phases of a pair average,
/// in linear light, to the picture.
///
/// With a black background the drawn value must be twice the pixel's linear value. Where that exceeds
/// full scale (linear value over 0.5, sRGB code value over 187) it is clamped, and the pair averages to
/// linear 0.5 instead: the highlights of the region lose contrast, and white looks like sRGB 188. The
/// average a pair shows is therefore `expectedAverage(v)` per component, which is `v` wherever the
/// picture has the headroom.
public enum FlickerCompositor {
    /// sRGB code value to linear light (IEC 61966-2-1).
    public static func linear(_ code: UInt8) -> Double {
        let value = Double(code) / 255
        return value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }

    /// Linear light (clamped to 0…1) to the nearest sRGB code value.
    public static func code(_ linear: Double) -> UInt8 {
        let value = min(1, max(0, linear))
        let encoded = value <= 0.0031308 ? value * 12.92 : 1.055 * pow(value, 1 / 2.4) - 0.055
        return UInt8((encoded * 255).rounded())
    }

    /// The drawn value for each source code value: twice its linear light, clamped.
    public static let drawn: [UInt8] = (0...255).map { code(2 * linear(UInt8($0))) }

    /// What a pair averages to, in linear light, re-encoded: the source where it had headroom.
    public static func expectedAverage(_ source: UInt8) -> UInt8 {
        code(linear(drawn[Int(source)]) / 2)
    }

    /// Writes phase `phase` of `source` into `destination` (both `rgb24`, same geometry): pixels outside
    /// `rectangle` are copied, pixels inside are brightened where `mask` draws them in this phase and
    /// black where it does not.
    public static func render(
        _ source: MaskPlane, into destination: MaskPlane, rectangle: FlickerRectangle, mask: FlickerMask,
        phase: FlickerPhase
    ) {
        precondition(mask.width == rectangle.width && mask.height == rectangle.height, "mask and region differ")
        drawn.withUnsafeBufferPointer { table in
            mask.withWords { words in
                for row in 0..<min(source.height, destination.height) {
                    let input = source.row(row)
                    let output = destination.row(row)
                    let count = min(input.count, output.count)
                    output.baseAddress!.update(from: input.baseAddress!, count: count)
                    let regionRow = row - rectangle.y
                    guard regionRow >= 0, regionRow < rectangle.height else { continue }
                    let columns = min(rectangle.width, max(0, count / 3 - rectangle.x))
                    let drawnBit: UInt64 = phase == .first ? 1 : 0
                    var index = regionRow * rectangle.width
                    var offset = rectangle.x * 3
                    for _ in 0..<columns {
                        if (words[index >> 6] >> UInt64(index & 63)) & 1 == drawnBit {
                            output[offset] = table[Int(input[offset])]
                            output[offset + 1] = table[Int(input[offset + 1])]
                            output[offset + 2] = table[Int(input[offset + 2])]
                        } else {
                            output[offset] = 0
                            output[offset + 1] = 0
                            output[offset + 2] = 0
                        }
                        index += 1
                        offset += 3
                    }
                }
            }
        }
    }
}
