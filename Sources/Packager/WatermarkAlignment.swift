import FoundationEssentials
import MediaCore

/// The summed-area table of one luma plane, so that the mean of any rectangle costs four lookups: what
/// the spatial search measures thousands of candidate grids with.
struct LumaIntegral: Sendable {
    let width: Int
    let height: Int
    /// (width + 1) × (height + 1) sums, row 0 and column 0 zero.
    private let sums: [Int64]

    init(_ luma: PlaneBuffer) {
        let (width, height) = (luma.rowBytes, luma.rows)
        self.width = width
        self.height = height
        let stride = width + 1
        var table = [Int64](repeating: 0, count: stride * (height + 1))
        table.withUnsafeMutableBufferPointer { table in
            for y in 0..<height {
                let line = luma.base + y * luma.linesize
                var running: Int64 = 0
                for x in 0..<width {
                    running += Int64(line[x])
                    table[(y + 1) * stride + x + 1] = table[y * stride + x + 1] + running
                }
            }
        }
        sums = table
    }

    /// The block means of `grid` under `mapping`, NaN outside; with `step` 2 only every other block of
    /// every other row (the coarse search), the rest NaN.
    func measure(_ grid: WatermarkGrid, _ mapping: WatermarkMapping, step: Int = 1) -> [Float] {
        var means = [Float](repeating: .nan, count: grid.columns * grid.rows)
        let stride = width + 1
        sums.withUnsafeBufferPointer { table in
            means.withUnsafeMutableBufferPointer { output in
                for row in Swift.stride(from: 0, to: grid.rows, by: step) {
                    for column in Swift.stride(from: 0, to: grid.columns, by: step) {
                        guard
                            let (x0, x1, y0, y1) = grid.bounds(
                                column: column, row: row, mapping, copyWidth: width, copyHeight: height)
                        else { continue }
                        let total =
                            table[y1 * stride + x1] - table[y0 * stride + x1] - table[y1 * stride + x0]
                            + table[y0 * stride + x0]
                        output[row * grid.columns + column] = Float(total) / Float((x1 - x0) * (y1 - y0))
                    }
                }
            }
        }
        return means
    }
}

/// The pure parts of aligning a copy with a watermarked asset: picture signatures, the search for the
/// time offset and the search for the spatial mapping.
enum WatermarkAlignment {
    /// Blocks on a side of one signature cell.
    static let cell = 4

    /// A picture's signature: its block means averaged over cells of `cell`×`cell` blocks (NaN blocks
    /// left out), less their mean, scaled to unit length, so that the dot product of two signatures is
    /// their normalised correlation. A cell with no block is 0; a flat picture is all zeros.
    static func signature(_ means: [Float], columns: Int, rows: Int) -> [Float] {
        let across = (columns + cell - 1) / cell
        let down = (rows + cell - 1) / cell
        var sums = [Float](repeating: 0, count: across * down)
        var counts = [Int](repeating: 0, count: across * down)
        means.withUnsafeBufferPointer { means in
            for row in 0..<rows {
                for column in 0..<columns where means[row * columns + column].isFinite {
                    let index = (row / cell) * across + column / cell
                    sums[index] += means[row * columns + column]
                    counts[index] += 1
                }
            }
        }
        for index in sums.indices where counts[index] > 0 { sums[index] /= Float(counts[index]) }
        return normalised(sums, present: counts.map { $0 > 0 })
    }

    /// `values` less the mean of the present ones, at unit length; absent entries are 0.
    static func normalised(_ values: [Float], present: [Bool]) -> [Float] {
        var mean = 0.0
        var count = 0
        for index in values.indices where present[index] {
            mean += Double(values[index])
            count += 1
        }
        guard count > 1 else { return [Float](repeating: 0, count: values.count) }
        mean /= Double(count)
        var result = [Float](repeating: 0, count: values.count)
        var energy = 0.0
        for index in values.indices where present[index] {
            let value = Double(values[index]) - mean
            result[index] = Float(value)
            energy += value * value
        }
        // A flat picture (less than a tenth of a level of spread per cell) has no signature.
        guard energy > 0.01 * Double(count) else { return [Float](repeating: 0, count: values.count) }
        let scale = Float(1 / energy.squareRoot())
        for index in result.indices { result[index] *= scale }
        return result
    }

    /// The dot product of two vectors of one length.
    static func dot(_ a: [Float], _ b: [Float]) -> Float {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var sum: Float = 0
                for index in 0..<min(a.count, b.count) { sum += a[index] * b[index] }
                return sum
            }
        }
    }

    /// The normalised correlation of the blocks present in `copy` (not NaN) with the same blocks of
    /// `reference`; −1 when fewer than `minimumBlocks` are present or either is flat.
    static func correlation(_ copy: [Float], _ reference: [Float], minimumBlocks: Int = 16) -> Double {
        copy.withUnsafeBufferPointer { copy in
            reference.withUnsafeBufferPointer { reference in
                var n = 0.0
                var sx = 0.0
                var sy = 0.0
                var sxx = 0.0
                var syy = 0.0
                var sxy = 0.0
                for index in 0..<min(copy.count, reference.count) where copy[index].isFinite {
                    let x = Double(copy[index])
                    let y = Double(reference[index])
                    n += 1
                    sx += x
                    sy += y
                    sxx += x * x
                    syy += y * y
                    sxy += x * y
                }
                guard n >= Double(minimumBlocks) else { return -1 }
                let vx = sxx - sx * sx / n
                let vy = syy - sy * sy / n
                guard vx > 1e-3 * n, vy > 1e-3 * n else { return -1 }
                return (sxy - sx * sy / n) / (vx * vy).squareRoot()
            }
        }
    }

    /// The reference pictures' times and signatures, and a nearest-picture look-up.
    struct Timeline: Sendable {
        /// Seconds from the asset's start, ascending.
        let times: [Double]
        let signatures: [[Float]]

        /// The picture nearest `time`, nil outside the timeline (more than half a picture away from its ends).
        func nearest(_ time: Double) -> Int? {
            guard let first = times.first, let last = times.last, time >= first - 0.05, time <= last + 0.05 else {
                return nil
            }
            var low = 0
            var high = times.count - 1
            while low < high {
                let middle = (low + high) / 2
                if times[middle] < time { low = middle + 1 } else { high = middle }
            }
            if low > 0, time - times[low - 1] < times[low] - time { return low - 1 }
            return low
        }

        /// The offset (asset time − copy time) at which the copy's pictures `samples` (copy time and
        /// signature) best match, among offsets that put the first sample on a reference picture within
        /// `radius` seconds of `around` (anywhere when nil), with the mean correlation there. Offsets that
        /// leave fewer than half the samples on the timeline are not considered.
        func bestOffset(_ samples: [(time: Double, signature: [Float])], around: Double? = nil, radius: Double = 0)
            -> (offset: Double, score: Double)?
        {
            guard let first = samples.first else { return nil }
            var best: (offset: Double, score: Double)?
            for time in times {
                let offset = time - first.time
                if let around, abs(offset - around) > radius { continue }
                var sum: Float = 0
                var matched = 0
                for sample in samples {
                    guard let picture = nearest(sample.time + offset) else { continue }
                    sum += WatermarkAlignment.dot(sample.signature, signatures[picture])
                    matched += 1
                }
                guard matched * 2 >= samples.count, matched > 0 else { continue }
                let score = Double(sum) / Double(matched)
                if best == nil || score > best!.score { best = (offset, score) }
            }
            return best
        }
    }

    /// The mapping near `start` under which the copy pictures `pairs` (summed-area tables) best correlate
    /// with their reference pictures' block means on `grid`, with that mean correlation: a uniform scale
    /// (the aspect of `start` kept) and a position, searched coarse to fine, the scale within ±15 % and
    /// the centre within ±8 % of the copy's size.
    static func refine(_ start: WatermarkMapping, grid: WatermarkGrid, pairs: [(LumaIntegral, [Float])])
        -> (mapping: WatermarkMapping, score: Double)
    {
        guard let copy = pairs.first?.0 else { return (start, -1) }
        let aspect = start.scaleY / start.scaleX
        let halfWidth = Double(grid.width) / 2
        let halfHeight = Double(grid.height) / 2
        func mapping(_ scale: Double, _ centreX: Double, _ centreY: Double) -> WatermarkMapping {
            WatermarkMapping(
                scaleX: scale, scaleY: scale * aspect, offsetX: centreX - scale * halfWidth,
                offsetY: centreY - scale * aspect * halfHeight)
        }
        func score(_ candidate: WatermarkMapping, step: Int) -> Double {
            var total = 0.0
            for (integral, reference) in pairs {
                let measured = integral.measure(grid, candidate, step: step)
                let needed = grid.columns * grid.rows / (step * step) / 2
                total += correlation(measured, reference, minimumBlocks: max(16, needed))
            }
            return total / Double(pairs.count)
        }
        var scale = start.scaleX
        var centreX = start.offsetX + start.scaleX * halfWidth
        var centreY = start.offsetY + start.scaleY * halfHeight
        var best = score(start, step: 1)
        // Coarse: every other block, scale steps of 2 %, centre steps of 1.5 % of the copy.
        var coarseBest = -2.0
        let positionStep = 0.015 * Double(max(copy.width, copy.height))
        let origin = (scale, centreX, centreY)
        for scaleStep in -8...8 {
            let candidateScale = origin.0 * (1 + 0.02 * Double(scaleStep))
            for dx in -5...5 {
                for dy in -5...5 {
                    let x = origin.1 + Double(dx) * positionStep
                    let y = origin.2 + Double(dy) * positionStep
                    let value = score(mapping(candidateScale, x, y), step: 2)
                    if value > coarseBest {
                        coarseBest = value
                        (scale, centreX, centreY) = (candidateScale, x, y)
                    }
                }
            }
        }
        // Fine: every block, halving the steps around the best so far.
        var relative = 0.01
        var position = positionStep / 2
        best = score(mapping(scale, centreX, centreY), step: 1)
        for _ in 0..<16 where position >= 0.25 {
            var improved = (scale, centreX, centreY)
            for ds in -1...1 {
                for dx in -1...1 {
                    for dy in -1...1 where ds != 0 || dx != 0 || dy != 0 {
                        let candidate = (
                            scale * (1 + relative * Double(ds)), centreX + position * Double(dx),
                            centreY + position * Double(dy)
                        )
                        let value = score(mapping(candidate.0, candidate.1, candidate.2), step: 1)
                        if value > best {
                            best = value
                            improved = candidate
                        }
                    }
                }
            }
            if improved == (scale, centreX, centreY) {
                relative /= 2
                position /= 2
            }
            (scale, centreX, centreY) = improved
        }
        return (mapping(scale, centreX, centreY), best)
    }
}
