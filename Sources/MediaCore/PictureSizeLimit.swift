/// The largest coded picture GuardPlay lets a decoder allocate for: a bound on memory that a hostile
/// header (an SPS claiming 16000×16000 over tiny frames) cannot lift.
///
/// A picture passes when `width × height ≤ maxPixels` and each side is at most `maxSide`. The default is
/// 8192×8192 (67,108,864 pixels, each side ≤ 8192); raising `maxPixels` raises the side bound to its
/// square root when that is larger. The limit is applied twice: as libavcodec's `max_pixels` option on
/// every decoder (those `avformat_find_stream_info` opens to probe, and those `makeDecoder` opens), so no
/// frame over it is allocated, and on each video stream's size once the input is open.
public struct PictureSizeLimit: Sendable, Equatable, CustomStringConvertible {
    /// The most pixels (width × height) a picture may have.
    public let maxPixels: Int
    /// The most pixels either side may have.
    public let maxSide: Int

    /// The default side bound, and the side of the default square.
    public static let defaultSide = 8192
    /// 8192×8192.
    public static let standard = PictureSizeLimit(maxPixels: defaultSide * defaultSide)

    /// A limit of `maxPixels` pixels (at least 1, at most `Int32.max`, libavcodec's own bound).
    public init(maxPixels: Int) {
        let pixels = min(max(1, maxPixels), Int(Int32.max))
        self.maxPixels = pixels
        var root = Int(Double(pixels).squareRoot())
        while root * root > pixels { root -= 1 }
        while (root + 1) * (root + 1) <= pixels { root += 1 }
        self.maxSide = max(PictureSizeLimit.defaultSide, root)
    }

    /// Parses a `--max-pixels` value: a pixel count such as `67108864`, or a size such as `8192x8192`.
    public init?(parsing text: String) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        let numbers = parts.map { Int($0) }
        guard (1...2).contains(numbers.count), numbers.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
        let (product, overflow) = numbers.dropFirst().reduce((numbers[0]!, false)) { result, value in
            let (next, over) = result.0.multipliedReportingOverflow(by: value!)
            return (next, result.1 || over)
        }
        guard !overflow, product <= Int(Int32.max) else { return nil }
        self.init(maxPixels: product)
    }

    /// True when a `width`×`height` picture is within the limit (an unknown size, 0, is not judged here).
    public func allows(width: Int, height: Int) -> Bool {
        guard width > 0, height > 0 else { return true }
        guard width <= maxSide, height <= maxSide else { return false }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        return !overflow && pixels <= maxPixels
    }

    /// Why a `width`×`height` picture is refused, or nil when it is allowed.
    public func refusal(width: Int, height: Int) -> String? {
        guard !allows(width: width, height: height) else { return nil }
        return "its pictures are \(width)×\(height), over the limit of \(self)"
    }

    /// `67108864 pixels (8192×8192), each side at most 8192`.
    public var description: String {
        let square = maxSide * maxSide == maxPixels ? " (\(maxSide)×\(maxSide))" : ""
        return "\(maxPixels) pixels\(square), each side at most \(maxSide)"
    }
}
