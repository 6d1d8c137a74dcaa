import FoundationEssentials
import MediaCore
import SystemSupport

/// Where the watermark grid of a reference picture lies in a copy's picture: reference pixel (x, y) is
/// copy pixel (`offsetX` + `scaleX`·x, `offsetY` + `scaleY`·y). A copy scaled to another size is a
/// stretch with no offset; one cropped and scaled, or shown inside a larger frame (a screen recording of
/// a player window), has an offset too. No rotation.
public struct WatermarkMapping: Sendable, Equatable, CustomStringConvertible {
    /// Copy pixels per reference pixel, across and down.
    public var scaleX: Double
    public var scaleY: Double
    /// Where reference pixel (0, 0) lies in the copy.
    public var offsetX: Double
    public var offsetY: Double

    /// A mapping with these fields.
    public init(scaleX: Double, scaleY: Double, offsetX: Double = 0, offsetY: Double = 0) {
        self.scaleX = scaleX
        self.scaleY = scaleY
        self.offsetX = offsetX
        self.offsetY = offsetY
    }

    /// The reference picture `width`×`height` stretched over the whole copy picture `copyWidth`×`copyHeight`.
    public static func stretch(width: Int, height: Int, onto copyWidth: Int, _ copyHeight: Int) -> WatermarkMapping {
        WatermarkMapping(
            scaleX: Double(copyWidth) / Double(width), scaleY: Double(copyHeight) / Double(height))
    }

    public var description: String {
        String(cFormat: "scale %.4f×%.4f offset (%.1f, %.1f)", scaleX, scaleY, offsetX, offsetY)
    }
}

/// The blocks of the watermark grid of a reference size, each less its outer `margin` pixels (where
/// scaling blurs one block into the next), as pixel rectangles of a copy under a mapping.
struct WatermarkGrid: Sendable {
    let width: Int
    let height: Int
    let columns: Int
    let rows: Int

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        (columns, rows) = WatermarkPattern.grid(width: width, height: height)
    }

    /// The copy-pixel bounds `x0..<x1`, `y0..<y1` of block (`column`, `row`) under `mapping` in a copy of
    /// `copyWidth`×`copyHeight`, or nil when the block is not wholly inside the copy.
    @inline(__always)
    func bounds(column: Int, row: Int, _ mapping: WatermarkMapping, copyWidth: Int, copyHeight: Int)
        -> (x0: Int, x1: Int, y0: Int, y1: Int)?
    {
        let size = WatermarkPattern.blockSize
        let margin = WatermarkBlockMeans.margin
        let left = column * size + margin
        let right = max(left + 1, min((column + 1) * size, width) - margin)
        let top = row * size + margin
        let bottom = max(top + 1, min((row + 1) * size, height) - margin)
        var x0 = Int((mapping.offsetX + Double(left) * mapping.scaleX).rounded())
        var x1 = Int((mapping.offsetX + Double(right) * mapping.scaleX).rounded())
        var y0 = Int((mapping.offsetY + Double(top) * mapping.scaleY).rounded())
        var y1 = Int((mapping.offsetY + Double(bottom) * mapping.scaleY).rounded())
        if x1 <= x0 { x1 = x0 + 1 }
        if y1 <= y0 { y1 = y0 + 1 }
        // A block that reaches past the copy's edge by less than a pixel of rounding keeps the rest.
        if x0 < 0, x0 > -2, x1 > 1 { x0 = 0 }
        if y0 < 0, y0 > -2, y1 > 1 { y0 = 0 }
        if x1 > copyWidth, x1 < copyWidth + 2, x0 < copyWidth - 1 { x1 = copyWidth }
        if y1 > copyHeight, y1 < copyHeight + 2, y0 < copyHeight - 1 { y1 = copyHeight }
        guard x0 >= 0, y0 >= 0, x1 <= copyWidth, y1 <= copyHeight else { return nil }
        return (x0, x1, y0, y1)
    }

    /// The mean luma of every block of `luma` under `mapping`, row by row; NaN for a block outside it.
    func measure(_ luma: PlaneBuffer, _ mapping: WatermarkMapping) -> [Float] {
        var means = [Float](repeating: .nan, count: columns * rows)
        means.withUnsafeMutableBufferPointer { output in
            for row in 0..<rows {
                for column in 0..<columns {
                    guard
                        let (x0, x1, y0, y1) = bounds(
                            column: column, row: row, mapping, copyWidth: luma.rowBytes, copyHeight: luma.rows)
                    else { continue }
                    var sum = 0
                    for y in y0..<y1 {
                        let line = luma.base + y * luma.linesize
                        for x in x0..<x1 { sum &+= Int(line[x]) }
                    }
                    output[row * columns + column] = Float(sum) / Float((y1 - y0) * (x1 - x0))
                }
            }
        }
        return means
    }
}

/// Decodes the pictures of a video as 8-bit luma planes, converting other pixel formats to yuv420p.
enum WatermarkPictures {
    /// Calls `body` with each picture of the best video stream of `path` (opened with the demuxer
    /// `options`) and its presentation time in seconds from the stream's first picture, until `body`
    /// returns false. The decoder runs `threads` threads (0: FFmpeg's choice). Returns the pictures given.
    @discardableResult
    static func forEach(
        _ path: String, options: [String: String] = [:], threads: Int = 0,
        _ body: (PlaneBuffer, Double) throws(PackagingError) -> Bool
    ) throws(PackagingError) -> Int {
        var count = 0
        do {
            let input = try InputContext(path: path, options: options)
            guard let index = input.bestStream(.video), !input.streams[index].isAttachedPicture else {
                throw PackagingError(.inputNoStreams, "\(path) has no video stream to read a watermark from")
            }
            let timeBase = input.streams[index].timeBase
            let decoder = try input.makeDecoder(streamIndex: index, threads: threads)
            let packet = Packet()
            let frame = Frame()
            var scaler: Scaler?
            var first: Int64?
            var going = true
            func drain() throws {
                while going, try decoder.receive(into: frame) == .output {
                    defer { frame.reset() }
                    var picture = frame
                    if frame.pixelFormat != .yuv420p && frame.pixelFormat != .yuvj420p {
                        let converter =
                            scaler ?? Scaler(width: frame.width, height: frame.height, pixelFormat: .yuv420p)
                        scaler = converter
                        picture = try converter.scale(frame)
                    }
                    let pts = frame.pts == noTimestamp ? nil : frame.pts
                    if first == nil, let pts { first = pts }
                    let seconds =
                        pts.map { Double($0 - (first ?? $0)) * timeBase.doubleValue } ?? Double(count) / 25
                    count += 1
                    going = try picture.withUnsafeMutablePlanes { planes throws(PackagingError) in
                        try body(planes[0], seconds)
                    }
                }
            }
            while going, try input.read(into: packet) == .packet {
                guard packet.streamIndex == index else { continue }
                try decoder.feed(packet, drain: drain)
            }
            if going { try decoder.feed(nil, drain: drain) }
        } catch let error as PackagingError {
            throw error
        } catch {
            throw InputCheck.classify(error, path: path)
        }
        return count
    }
}

/// The mean luma of every block of the watermark grid in every picture of a video, the grid being that
/// of a reference size (the variants'), so that a copy scaled to another size is read on the blocks
/// the pattern was drawn on. Each block's two outer pixels on every side are left out, where scaling
/// blurs one block into the next.
public struct WatermarkBlockMeans: Sendable {
    /// The reference picture size the grid is laid on.
    public let width: Int
    public let height: Int
    /// Blocks across and down.
    public let columns: Int
    public let rows: Int
    /// Per picture, in presentation order, the block means row by row (NaN for a block the mapping puts
    /// outside the picture).
    public let frames: [[Float]]

    /// The most pictures read from one file: a minute at 60 fps, far more than a segment.
    public static let frameLimit = 3_600
    /// Pixels left out on each side of a reference block.
    static let margin = 2

    /// Decodes the video of `path` (an unencrypted file FFmpeg reads) and measures its blocks on the grid
    /// of `width`×`height`, or of its own size when nil, stretched over the whole picture.
    public init(path: String, width: Int? = nil, height: Int? = nil) throws(PackagingError) {
        var grid = width.flatMap { w in height.map { WatermarkGrid(width: w, height: $0) } }
        var frames: [[Float]] = []
        try WatermarkPictures.forEach(path) { luma, _ in
            let reference = grid ?? WatermarkGrid(width: luma.rowBytes, height: luma.rows)
            grid = reference
            let mapping = WatermarkMapping.stretch(
                width: reference.width, height: reference.height, onto: luma.rowBytes, luma.rows)
            frames.append(reference.measure(luma, mapping))
            return frames.count < WatermarkBlockMeans.frameLimit
        }
        guard let grid, !frames.isEmpty else {
            throw PackagingError(.inputCorrupt, "\(path) has no decodable picture to read a watermark from")
        }
        self.init(grid: grid, frames: frames)
    }

    init(grid: WatermarkGrid, frames: [[Float]]) {
        width = grid.width
        height = grid.height
        columns = grid.columns
        rows = grid.rows
        self.frames = frames
    }
}

/// What reading one segment of a copy gave.
public struct WatermarkReading: Sendable, Equatable {
    /// The variant the copy is nearer to.
    public var variant: WatermarkVariant
    /// The soft score: about +1 for a copy of A, −1 for a copy of B, near 0 when the mark is gone
    /// (its size says how sure the reading is).
    public var score: Double
    /// Pictures compared.
    public var frames: Int
}

/// Says whether a decoded segment of a copy carries variant A or B of a `--watermark ab` segment:
/// every picture's blocks are compared with both variants' (scaled to the copy's size when it was
/// scaled), the copy's offset from their midpoint projected on their difference, which is the
/// segment's pattern as encoded. `read(suspect:a:b:)` assumes the copy shows the same pictures in the
/// same order, uncropped; `WatermarkDetector` aligns a copy in time and space first and reads through
/// `project`.
public enum WatermarkReader {
    /// Reads the copy `suspect` against the segment's variants `a` and `b` (unencrypted video files).
    public static func read(suspect: String, a: String, b: String) throws(PackagingError) -> WatermarkReading {
        let first = try WatermarkBlockMeans(path: a)
        let second = try WatermarkBlockMeans(path: b, width: first.width, height: first.height)
        let copy = try WatermarkBlockMeans(path: suspect, width: first.width, height: first.height)
        return read(copy, a: first, b: second)
    }

    /// Reads block means already measured on one grid.
    public static func read(_ suspect: WatermarkBlockMeans, a: WatermarkBlockMeans, b: WatermarkBlockMeans)
        -> WatermarkReading
    {
        let count = min(suspect.frames.count, a.frames.count, b.frames.count)
        var sum = Projection()
        for index in 0..<count { sum.add(project(suspect.frames[index], a: a.frames[index], b: b.frames[index])) }
        return WatermarkReading(variant: sum.score >= 0 ? .a : .b, score: sum.score, frames: count)
    }

    /// One picture's (or a sum of pictures') projection of a copy on a segment's pattern.
    struct Projection: Sendable {
        var projection = 0.0
        var energy = 0.0

        mutating func add(_ other: Projection) {
            projection += other.projection
            energy += other.energy
        }

        /// +1 for a copy of A, −1 for one of B.
        var score: Double { energy > 0 ? projection / energy : 0 }
    }

    /// The copy's offset from the variants' midpoint, less what the midpoint's own brightness and
    /// contrast explain (a re-encode or a player may shift and stretch the levels), projected on half
    /// their difference. Blocks the copy lacks (NaN) are left out.
    static func project(_ copy: [Float], a plus: [Float], b minus: [Float]) -> Projection {
        let blocks = min(copy.count, plus.count, minus.count)
        return copy.withUnsafeBufferPointer { copy in
            plus.withUnsafeBufferPointer { plus in
                minus.withUnsafeBufferPointer { minus in
                    // A least-squares fit of the copy on the midpoint: copy ≈ gain·mid + bias.
                    var n = 0.0
                    var sumMid = 0.0
                    var sumCopy = 0.0
                    var sumMidMid = 0.0
                    var sumMidCopy = 0.0
                    for block in 0..<blocks where copy[block].isFinite {
                        let mid = (Double(plus[block]) + Double(minus[block])) / 2
                        let value = Double(copy[block])
                        n += 1
                        sumMid += mid
                        sumCopy += value
                        sumMidMid += mid * mid
                        sumMidCopy += mid * value
                    }
                    guard n >= 2 else { return Projection() }
                    let variance = sumMidMid - sumMid * sumMid / n
                    let covariance = sumMidCopy - sumMid * sumCopy / n
                    var gain = variance > 0 ? covariance / variance : 1
                    // A picture whose levels the copy does not follow (a cut, a black frame) is not rescued.
                    if !(0.5...2).contains(gain) { gain = 1 }
                    let bias = (sumCopy - gain * sumMid) / n
                    var result = Projection()
                    for block in 0..<blocks where copy[block].isFinite {
                        let mid = (Double(plus[block]) + Double(minus[block])) / 2
                        let half = (Double(plus[block]) - Double(minus[block])) / 2
                        result.projection += (Double(copy[block]) - gain * mid - bias) * half
                        result.energy += gain * half * half
                    }
                    return result
                }
            }
        }
    }
}
