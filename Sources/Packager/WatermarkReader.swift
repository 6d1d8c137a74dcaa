import Foundation
import MediaCore

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
    /// Per picture, in presentation order, the block means row by row.
    public let frames: [[Float]]

    /// The most pictures read from one file: a minute at 60 fps, far more than a segment.
    public static let frameLimit = 3_600
    /// Pixels left out on each side of a reference block.
    static let margin = 2

    /// Decodes the video of `path` (an unencrypted file FFmpeg reads) and measures its blocks on the grid
    /// of `width`×`height`, or of its own size when nil.
    public init(path: String, width: Int? = nil, height: Int? = nil) throws(PackagingError) {
        var reference = width.flatMap { w in height.map { (w, $0) } }
        var frames: [[Float]] = []
        do {
            let input = try InputContext(path: path)
            guard let index = input.bestStream(.video) else {
                throw PackagingError(.inputNoStreams, "\(path) has no video stream to read a watermark from")
            }
            let decoder = try input.makeDecoder(streamIndex: index)
            let packet = Packet()
            let frame = Frame()
            var scaler: Scaler?
            func drain() throws {
                while try decoder.receive(into: frame) == .output {
                    defer { frame.reset() }
                    guard frames.count < WatermarkBlockMeans.frameLimit else { return }
                    var picture = frame
                    if frame.pixelFormat != .yuv420p {
                        let converter =
                            scaler ?? Scaler(width: frame.width, height: frame.height, pixelFormat: .yuv420p)
                        scaler = converter
                        picture = try converter.scale(frame)
                    }
                    if reference == nil { reference = (picture.width, picture.height) }
                    frames.append(WatermarkBlockMeans.measure(picture, reference: reference!))
                }
            }
            while try input.read(into: packet) == .packet {
                guard packet.streamIndex == index else { continue }
                try decoder.feed(packet, drain: drain)
            }
            try decoder.feed(nil, drain: drain)
        } catch let error as PackagingError {
            throw error
        } catch {
            throw PackagingError(.inputCorrupt, "cannot decode the video of \(path): \(error)")
        }
        guard let (referenceWidth, referenceHeight) = reference, !frames.isEmpty else {
            throw PackagingError(.inputCorrupt, "\(path) has no decodable picture to read a watermark from")
        }
        self.width = referenceWidth
        self.height = referenceHeight
        (columns, rows) = WatermarkPattern.grid(width: referenceWidth, height: referenceHeight)
        self.frames = frames
    }

    private static func measure(_ picture: Frame, reference: (width: Int, height: Int)) -> [Float] {
        let (columns, rows) = WatermarkPattern.grid(width: reference.width, height: reference.height)
        let size = WatermarkPattern.blockSize
        let scaleX = Double(picture.width) / Double(reference.width)
        let scaleY = Double(picture.height) / Double(reference.height)
        return picture.withUnsafeMutablePlanes { planes in
            let luma = planes[0]
            var means = [Float](repeating: 0, count: columns * rows)
            for row in 0..<rows {
                let top = row * size + margin
                let bottom = max(top + 1, min((row + 1) * size, reference.height) - margin)
                let y0 = min(luma.rows - 1, Int(Double(top) * scaleY))
                let y1 = min(luma.rows, max(y0 + 1, Int(Double(bottom) * scaleY)))
                for column in 0..<columns {
                    let left = column * size + margin
                    let right = max(left + 1, min((column + 1) * size, reference.width) - margin)
                    let x0 = min(luma.rowBytes - 1, Int(Double(left) * scaleX))
                    let x1 = min(luma.rowBytes, max(x0 + 1, Int(Double(right) * scaleX)))
                    var sum = 0
                    for y in y0..<y1 {
                        let line = luma.base + y * luma.linesize
                        for x in x0..<x1 { sum += Int(line[x]) }
                    }
                    means[row * columns + column] = Float(sum) / Float((y1 - y0) * (x1 - x0))
                }
            }
            return means
        }
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
/// segment's pattern as encoded. The copy must show the same pictures in the same order, uncropped:
/// the full detector aligns a copy in time and space first.
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
        var projection = 0.0
        var energy = 0.0
        for index in 0..<count {
            let (copy, plus, minus) = (suspect.frames[index], a.frames[index], b.frames[index])
            let blocks = min(copy.count, plus.count, minus.count)
            guard blocks > 0 else { continue }
            // The copy's offset from the midpoint, less its mean (a re-encode may shift the brightness).
            var offsets = [Double](repeating: 0, count: blocks)
            var mean = 0.0
            for block in 0..<blocks {
                offsets[block] = Double(copy[block]) - (Double(plus[block]) + Double(minus[block])) / 2
                mean += offsets[block]
            }
            mean /= Double(blocks)
            for block in 0..<blocks {
                let half = (Double(plus[block]) - Double(minus[block])) / 2
                projection += (offsets[block] - mean) * half
                energy += half * half
            }
        }
        let score = energy > 0 ? projection / energy : 0
        return WatermarkReading(variant: score >= 0 ? .a : .b, score: score, frames: count)
    }
}
