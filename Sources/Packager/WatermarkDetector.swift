import Dispatch
import FoundationEssentials
import MediaCore
import Synchronization

/// What a suspect file is, before anything is read from it.
public enum WatermarkSuspectKind: Sendable, Equatable {
    /// A video to read.
    case video
    /// One picture: a PNG, a JPEG, a one-frame video.
    case stillImage
    /// Sound and no moving picture (cover art aside).
    case audioOnly
}

/// What the detector read from a copy: a soft score per asset segment it covers, and how it found them.
public struct WatermarkDetection: Sendable {
    /// Segment index → score, about +1 for variant A, −1 for B, near 0 for no mark.
    public var scores: [Int: Double]
    /// Segment index → the copy's pictures read against it.
    public var segmentPictures: [Int: Int]
    /// Pictures the copy has.
    public var pictures: Int
    /// Pictures matched to a picture of the asset.
    public var matchedPictures: Int
    /// Where the asset's picture lies in the copy's, when found.
    public var mapping: WatermarkMapping?
    /// Asset time at the copy's first picture, in seconds, when found.
    public var startsAt: Double?
    /// The copy's pictures' span in seconds.
    public var seconds: Double
}

/// Names the segments of a watermarked asset a copy shows and reads each one's variant: it aligns the
/// copy with the asset in space and time, then projects each matched picture on its segment's A − B.
///
/// 1. The reference: variant A of every segment is decoded (segments in parallel, one decoder thread
///    each) to block means on the variants' 16×16 grid, and each picture gets a signature (means over
///    4×4 blocks, normalised).
/// 2. A probe of the copy's first 20 s: where its picture changes (the video inside a larger frame, as
///    a screen recording has it), and a few pictures' summed-area tables.
/// 3. For each of two starting mappings (the reference fitted into the changing area, and fitted into the
///    whole frame), the probe's signatures find the best time offset; from the better one, a coarse-to-fine
///    search of scale and position maximises the probe pictures' correlation with their matched reference
///    pictures, and the offset is found again under it.
/// 4. The whole copy is decoded once: every picture's blocks are measured under the mapping, its time
///    offset tracked second by second (a recording may stall or skip), and each picture that correlates
///    with its reference picture is projected on that segment's pattern. Variant B is decoded only for the
///    segments the copy covers.
public final class WatermarkDetector: Sendable {
    /// The asset read.
    public let asset: WatermarkDetectionAsset
    /// Segments decoded at once.
    public let threads: Int
    /// Seconds of the copy's start probed for the mapping.
    static let probeSeconds = 20.0
    /// Probe pictures kept for the spatial search.
    static let probePictures = 24
    /// The mean signature correlation below which a stretch of the copy is not taken as the asset.
    static let matchThreshold = 0.6
    /// The block correlation below which a picture is not read.
    static let pictureThreshold = 0.7

    /// A detector of copies of `asset`, decoding `threads` segments at once (default: one per core).
    public init(asset: WatermarkDetectionAsset, threads: Int? = nil) {
        self.asset = asset
        self.threads = max(1, threads ?? ProcessInfo.processInfo.activeProcessorCount)
    }

    /// What `path` holds: video, a still image or audio only. A file FFmpeg cannot open throws.
    public static func inspect(_ path: String) throws(PackagingError) -> WatermarkSuspectKind {
        try InputCheck.preflight(path)
        do {
            let input = try InputContext(path: path)
            let moving = input.streams.filter { $0.mediaType == .video && !$0.isAttachedPicture }
            guard let video = moving.first else {
                if input.streams.contains(where: { $0.mediaType == .audio }) { return .audioOnly }
                throw PackagingError(.inputNoStreams, "\(path) has no video and no audio stream")
            }
            let format = input.formatName
            let stillCodecs: Set<String> = ["png", "mjpeg", "bmp", "webp", "tiff", "gif", "jpeg2000", "ppm", "pgm"]
            if format.hasPrefix("image2") || format.hasSuffix("_pipe")
                || (stillCodecs.contains(video.codecName) && video.frameCount <= 1)
            {
                return .stillImage
            }
            return .video
        } catch let error as PackagingError {
            throw error
        } catch {
            throw InputCheck.classify(error, path: path)
        }
    }

    /// Reads the copy `path` (an unencrypted video file FFmpeg reads). Temporary clear variants go under
    /// `scratch`, a private directory the caller removes.
    public func detect(_ path: String, scratch: String) throws(PackagingError) -> WatermarkDetection {
        let reference = try decode(asset.segments.map(\.index), .a, scratch: scratch)
        guard let grid = reference.values.first.map({ WatermarkGrid(width: $0.width, height: $0.height) }) else {
            throw PackagingError(.inputCorrupt, "\(asset.rendition) has no picture")
        }
        // The reference timeline: each segment's pictures evenly over its EXTINF duration.
        var times: [Double] = []
        var signatures: [[Float]] = []
        var owner: [(segment: Int, picture: Int)] = []
        for segment in asset.segments {
            guard let means = reference[segment.index], means.width == grid.width, means.height == grid.height
            else {
                throw PackagingError(.inputCorrupt, "\(asset.rendition): segment \(segment.index) has another size")
            }
            for (index, frame) in means.frames.enumerated() {
                times.append(segment.start + Double(index) * segment.duration / Double(means.frames.count))
                signatures.append(WatermarkAlignment.signature(frame, columns: grid.columns, rows: grid.rows))
                owner.append((segment.index, index))
            }
        }
        let timeline = WatermarkAlignment.Timeline(times: times, signatures: signatures)
        func referenceMeans(_ picture: Int) -> [Float] {
            reference[owner[picture].segment]!.frames[owner[picture].picture]
        }

        // The probe, and the mapping and offset it gives.
        let probe = try Probe.read(path)
        var mapping: WatermarkMapping?
        var offset: Double?
        if probe.pictures >= 2 {
            var best: (mapping: WatermarkMapping, offset: Double, score: Double)?
            for start in probe.startingMappings(grid: grid) {
                let samples = probe.samples.map {
                    (
                        time: $0.time,
                        signature: WatermarkAlignment.signature(
                            $0.integral.measure(grid, start), columns: grid.columns, rows: grid.rows)
                    )
                }
                guard let found = timeline.bestOffset(samples) else { continue }
                if best == nil || found.score > best!.score { best = (start, found.offset, found.score) }
            }
            if var best {
                for _ in 0..<2 {
                    let pairs = probe.samples.compactMap { sample -> (LumaIntegral, [Float])? in
                        guard let picture = timeline.nearest(sample.time + best.offset) else { return nil }
                        return (sample.integral, referenceMeans(picture))
                    }
                    let refined = WatermarkAlignment.refine(best.mapping, grid: grid, pairs: Array(pairs.prefix(8)))
                    let samples = probe.samples.map {
                        (
                            time: $0.time,
                            signature: WatermarkAlignment.signature(
                                $0.integral.measure(grid, refined.mapping), columns: grid.columns, rows: grid.rows)
                        )
                    }
                    guard let found = timeline.bestOffset(samples), found.score >= best.score - 0.05 else { break }
                    best = (refined.mapping, found.offset, found.score)
                }
                if best.score >= Self.matchThreshold {
                    mapping = best.mapping
                    offset = best.offset
                }
            }
        }
        guard let mapping, let offset else {
            return WatermarkDetection(
                scores: [:], segmentPictures: [:], pictures: probe.pictures, matchedPictures: 0, mapping: nil,
                startsAt: nil, seconds: probe.seconds)
        }

        // The whole copy under the mapping.
        var copy: [(time: Double, means: [Float], signature: [Float])] = []
        try WatermarkPictures.forEach(path) { luma, time in
            let means = grid.measure(luma, mapping)
            copy.append((time, means, WatermarkAlignment.signature(means, columns: grid.columns, rows: grid.rows)))
            return true
        }
        // The offset, tracked second by second.
        var matches: [(copy: Int, picture: Int)] = []
        var current = offset
        var chunkStart = 0
        while chunkStart < copy.count {
            var chunkEnd = chunkStart + 1
            while chunkEnd < copy.count, copy[chunkEnd].time < copy[chunkStart].time + 1 { chunkEnd += 1 }
            let samples = copy[chunkStart..<chunkEnd].map { (time: $0.time, signature: $0.signature) }
            var found = timeline.bestOffset(samples, around: current, radius: 0.6)
            if found.map({ $0.score < Self.matchThreshold }) ?? true {
                if let global = timeline.bestOffset(samples), global.score > (found?.score ?? -1) { found = global }
            }
            if let found, found.score >= Self.matchThreshold {
                current = found.offset
                for index in chunkStart..<chunkEnd {
                    guard let picture = timeline.nearest(copy[index].time + current),
                        WatermarkAlignment.correlation(copy[index].means, referenceMeans(picture))
                            >= Self.pictureThreshold
                    else { continue }
                    matches.append((index, picture))
                }
            }
            chunkStart = chunkEnd
        }

        // Variant B of the covered segments, and each segment's projection.
        let covered = Set(matches.map { owner[$0.picture].segment })
        let other = try decode(covered.sorted(), .b, scratch: scratch)
        var sums: [Int: WatermarkReader.Projection] = [:]
        var counts: [Int: Int] = [:]
        for (index, picture) in matches {
            let (segment, frame) = owner[picture]
            guard let b = other[segment], frame < b.frames.count else { continue }
            let projection = WatermarkReader.project(
                copy[index].means, a: reference[segment]!.frames[frame], b: b.frames[frame])
            sums[segment, default: WatermarkReader.Projection()].add(projection)
            counts[segment, default: 0] += 1
        }
        // A segment seen in fewer than three pictures says too little to count.
        var scores: [Int: Double] = [:]
        for (segment, sum) in sums where counts[segment]! >= 3 { scores[segment] = sum.score }
        return WatermarkDetection(
            scores: scores, segmentPictures: counts.filter { $0.value >= 3 }, pictures: copy.count,
            matchedPictures: matches.count, mapping: mapping, startsAt: offset + (copy.first?.time ?? 0),
            seconds: (copy.last?.time ?? 0) - (copy.first?.time ?? 0))
    }

    /// Block means of `variant` of the segments `indices`, `threads` segments at a time.
    private func decode(_ indices: [Int], _ variant: WatermarkVariant, scratch: String) throws(PackagingError)
        -> [Int: WatermarkBlockMeans]
    {
        let segments = Dictionary(uniqueKeysWithValues: asset.segments.map { ($0.index, $0) })
        let work = indices.compactMap { segments[$0] }
        let next = Mutex(0)
        let results = Mutex<[Int: WatermarkBlockMeans]>([:])
        let failure = Mutex<PackagingError?>(nil)
        let asset = self.asset
        DispatchQueue.concurrentPerform(iterations: min(threads, max(1, work.count))) { _ in
            while true {
                let index = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard index < work.count, failure.withLock({ $0 == nil }) else { return }
                do throws(PackagingError) {
                    let means = try asset.blockMeans(work[index], variant, scratch: scratch)
                    results.withLock { $0[work[index].index] = means }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return results.withLock { $0 }
    }

    /// The copy's first `probeSeconds`: where its picture changes, and summed-area tables of a few
    /// pictures spread over it.
    struct Probe {
        var samples: [(time: Double, integral: LumaIntegral)] = []
        var pictures = 0
        var seconds = 0.0
        var width = 0
        var height = 0
        /// Per point of a 4-pixel lattice, the sum and sum of squares of its luma over the pictures.
        private var sums: [Double] = []
        private var squares: [Double] = []
        static let lattice = 4

        /// Reads the probe of the copy `path`.
        static func read(_ path: String) throws(PackagingError) -> Probe {
            var nextSample = 0.0
            var probe = Probe()
            let limit = WatermarkDetector.probeSeconds
            try WatermarkPictures.forEach(path) { luma, time in
                if probe.pictures == 0 {
                    probe.width = luma.rowBytes
                    probe.height = luma.rows
                    let points = (luma.rowBytes / Self.lattice) * (luma.rows / Self.lattice)
                    probe.sums = [Double](repeating: 0, count: points)
                    probe.squares = probe.sums
                }
                guard luma.rowBytes == probe.width, luma.rows == probe.height else { return false }
                probe.pictures += 1
                probe.seconds = time
                let across = probe.width / Self.lattice
                for y in 0..<(probe.height / Self.lattice) {
                    let line = luma.base + y * Self.lattice * luma.linesize
                    for x in 0..<across {
                        let value = Double(line[x * Self.lattice])
                        probe.sums[y * across + x] += value
                        probe.squares[y * across + x] += value * value
                    }
                }
                if time >= nextSample, probe.samples.count < WatermarkDetector.probePictures {
                    probe.samples.append((time, LumaIntegral(luma)))
                    nextSample = time + limit / Double(WatermarkDetector.probePictures)
                }
                return time < limit
            }
            return probe
        }

        /// The reference fitted (its aspect kept, centred) into the rectangle of the copy whose luma
        /// changes, and into the whole copy.
        func startingMappings(grid: WatermarkGrid) -> [WatermarkMapping] {
            func fit(_ x0: Double, _ y0: Double, _ x1: Double, _ y1: Double) -> WatermarkMapping {
                let scale = min((x1 - x0) / Double(grid.width), (y1 - y0) / Double(grid.height))
                return WatermarkMapping(
                    scaleX: scale, scaleY: scale, offsetX: (x0 + x1 - scale * Double(grid.width)) / 2,
                    offsetY: (y0 + y1 - scale * Double(grid.height)) / 2)
            }
            var mappings = [fit(0, 0, Double(width), Double(height))]
            let across = width / Self.lattice
            let down = height / Self.lattice
            guard pictures >= 2, across > 0, down > 0 else { return mappings }
            // Rows and columns where at least a tenth of the points vary by more than 3 levels.
            var columnCounts = [Int](repeating: 0, count: across)
            var rowCounts = [Int](repeating: 0, count: down)
            let n = Double(pictures)
            for y in 0..<down {
                for x in 0..<across {
                    let mean = sums[y * across + x] / n
                    if squares[y * across + x] / n - mean * mean > 9 {
                        columnCounts[x] += 1
                        rowCounts[y] += 1
                    }
                }
            }
            guard let left = columnCounts.firstIndex(where: { $0 * 10 >= down }),
                let right = columnCounts.lastIndex(where: { $0 * 10 >= down }),
                let top = rowCounts.firstIndex(where: { $0 * 10 >= across }),
                let bottom = rowCounts.lastIndex(where: { $0 * 10 >= across }), right > left, bottom > top
            else { return mappings }
            let box = fit(
                Double(left * Self.lattice), Double(top * Self.lattice), Double((right + 1) * Self.lattice),
                Double((bottom + 1) * Self.lattice))
            if box != mappings[0] { mappings.append(box) }
            return mappings
        }
    }
}
