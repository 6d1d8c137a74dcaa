import Crypto
import MediaCore

/// Which of a segment's two watermarked variants: A carries the picture plus the segment's pattern,
/// B the picture minus it.
public enum WatermarkVariant: String, Sendable, Equatable {
    case a
    case b
}

/// The keyed spread-spectrum luma pattern of `--watermark ab`: every block of `blockSize`×`blockSize`
/// pixels is raised or lowered by a small offset, the signs drawn per segment from AES-128-CTR under
/// the watermark key (the counter names the segment, so each segment's pattern differs), the size of
/// the offset following the block's own activity (a flat block gets 0.4 of a level, a textured one
/// up to 1.2) so the mark hides where the picture has detail.
///
/// Fractional offsets are spread over the block with a 4×4 ordered dither, so a block's mean moves by
/// the amplitude exactly; that mean is what survives re-encoding and scaling, and what
/// `WatermarkReader` measures.
public struct WatermarkPattern: Sendable {
    /// Pixels on a side of one block of the pattern.
    public static let blockSize = 16
    /// The amplitude of a flat block, in luma levels.
    static let minimumAmplitude = 0.4
    /// The largest amplitude, reached by blocks whose luma standard deviation is 8 levels or more: with
    /// x264 at CRF 18 each variant stays about 46 dB from a plain encode of the fixtures (the goal is
    /// 45), and a copy re-encoded at CRF 28 and halved in size still reads at about half the score of
    /// the variant itself.
    static let maximumAmplitude = 1.2
    /// Amplitude gained per level of standard deviation.
    static let activityGain = 0.1
    /// The 4×4 Bayer matrix, as thresholds in 0..<1.
    static let dither: [Double] = [0, 8, 2, 10, 12, 4, 14, 6, 3, 11, 1, 9, 15, 7, 13, 5].map { (Double($0) + 0.5) / 16 }

    /// The 16-byte watermark key.
    public let key: [UInt8]

    /// A pattern under `key`, which must be 16 bytes.
    public init(key: [UInt8]) throws(PackagingError) {
        guard key.count == 16 else {
            throw PackagingError(
                .invalidOptions, "the watermark key must be 16 bytes (32 hex digits), got \(key.count)")
        }
        self.key = key
    }

    /// Blocks across and down a picture of `width`×`height` (a partial block at an edge counts).
    public static func grid(width: Int, height: Int) -> (columns: Int, rows: Int) {
        ((width + blockSize - 1) / blockSize, (height + blockSize - 1) / blockSize)
    }

    /// The signs (+1 or −1) of segment `segment`'s blocks for a `columns`×`rows` grid, row by row: bit
    /// `i` of the AES-CTR key stream whose counter block is "GPWM" and the segment number.
    public func signs(segment: Int, columns: Int, rows: Int) -> [Int8] {
        let count = columns * rows
        var stream = [UInt8](repeating: 0, count: (count + 7) / 8)
        var counter: [UInt8] = Array("GPWM".utf8) + [UInt8](repeating: 0, count: 4)
        for shift in stride(from: 56, through: 0, by: -8) {
            counter.append(UInt8(truncatingIfNeeded: segment >> shift))
        }
        // AES-128-CTR with a 16-byte key and counter cannot fail but through OpenSSL running out of memory.
        do {
            let cipher = try AESCTR(key: key)
            try cipher.restart(counter: counter)
            try cipher.process(&stream, range: 0..<stream.count)
        } catch {
            fatalError("AES-128-CTR for the watermark pattern: \(error)")
        }
        return (0..<count).map { (stream[$0 >> 3] >> UInt8($0 & 7)) & 1 == 1 ? 1 : -1 }
    }

    /// A block's amplitude in luma levels for its standard deviation.
    static func amplitude(standardDeviation: Double) -> Double {
        min(maximumAmplitude, minimumAmplitude + activityGain * standardDeviation)
    }

    /// Writes `source` plus the pattern `signs` into `plus` and minus it into `minus` (three luma planes
    /// of one size).
    static func apply(signs: [Int8], columns: Int, source: PlaneBuffer, plus: PlaneBuffer, minus: PlaneBuffer) {
        let width = source.rowBytes
        let height = source.rows
        var blockY = 0
        while blockY * blockSize < height {
            let top = blockY * blockSize
            let bottom = min(top + blockSize, height)
            var blockX = 0
            while blockX * blockSize < width {
                let left = blockX * blockSize
                let right = min(left + blockSize, width)
                var sum = 0
                var squares = 0
                for y in top..<bottom {
                    let row = source.base + y * source.linesize
                    for x in left..<right {
                        let value = Int(row[x])
                        sum += value
                        squares += value * value
                    }
                }
                let count = Double((bottom - top) * (right - left))
                let mean = Double(sum) / count
                let deviation = max(0, Double(squares) / count - mean * mean).squareRoot()
                let amplitude = amplitude(standardDeviation: deviation)
                let sign = Int(signs[blockY * columns + blockX])
                for y in top..<bottom {
                    let row = source.base + y * source.linesize
                    let up = plus.base + y * plus.linesize
                    let down = minus.base + y * minus.linesize
                    let ditherRow = (y & 3) * 4
                    for x in left..<right {
                        let offset = sign * Int(amplitude + dither[ditherRow + (x & 3)])
                        let value = Int(row[x])
                        up[x] = UInt8(clamping: value + offset)
                        down[x] = UInt8(clamping: value - offset)
                    }
                }
                blockX += 1
            }
            blockY += 1
        }
    }
}
