import Crypto
import MediaFormats

/// The CMAF layer: the ISO BMFF box reader over a tree of boxes, and, on the same bytes read as an
/// H.264 access unit, the sample builder, the subsample map and a round trip through both CENC schemes.
enum CMAFFuzzing {
    /// Boxes whose bodies are boxes, as the verifier descends into them.
    static let containers: Set<String> = [
        "moov", "trak", "mdia", "minf", "stbl", "mvex", "moof", "traf", "edts", "dinf", "sinf", "schi",
    ]

    static func cmaf(_ data: UnsafeRawBufferPointer) {
        let bytes = Array(data)
        var budget = 4_096
        walk(bytes, range: nil, depth: 0, budget: &budget)
        sample(bytes)
    }

    /// Reads the boxes of `range` and descends into containers, at most 16 deep and `budget` boxes in all.
    private static func walk(_ bytes: [UInt8], range: Range<Int>?, depth: Int, budget: inout Int) {
        var reader = BoxReader(bytes, range: range, structure: "fuzz")
        guard let boxes = try? reader.boxes() else { return }
        for box in boxes {
            precondition(box.range.lowerBound >= 0 && box.range.upperBound <= bytes.count, "box outside its input")
            precondition(box.body.lowerBound >= box.range.lowerBound && box.body.upperBound == box.range.upperBound)
            budget -= 1
            guard budget > 0 else { return }
            if depth < 16, containers.contains(box.type) {
                walk(bytes, range: box.body, depth: depth + 1, budget: &budget)
            }
        }
    }

    /// The bytes as one Annex-B access unit: the builder's sample and clear bytes, the `senc` maps it
    /// gives for `cbcs` and `cenc`, and each scheme's encryption undone by its decryption.
    private static func sample(_ bytes: [UInt8]) {
        let units = bytes.withUnsafeBytes { NALUnitSplitter.annexB($0) }
        var builder = H264SampleBuilder()
        guard let built = try? builder.sample(bytes: bytes, nalUnits: units) else { return }
        precondition(built.units.reduce(0) { $0 + $1.size } == built.bytes.count, "units do not cover the sample")
        precondition(built.units.allSatisfy { $0.clear <= $0.size }, "a unit's clear bytes exceed its size")
        for scheme in [CENCScheme.cbcs, .cenc] {
            let map = SubsampleMap.make(built.units, scheme: scheme)
            precondition(map.reduce(0) { $0 + $1.clear + $1.protected } == built.bytes.count, "map does not cover")
            precondition(map.allSatisfy { $0.clear <= 65_535 && $0.clear >= 0 && $0.protected >= 0 })
            if scheme == .cenc { precondition(map.allSatisfy { $0.protected % 16 == 0 }, "cenc range not aligned") }
            let iv = scheme == .cbcs ? MediaFuzzing.iv : Array(MediaFuzzing.iv.prefix(8))
            guard let encryptor = try? CENCSampleCipher(scheme: scheme, key: MediaFuzzing.key, encrypt: true),
                let decryptor = try? CENCSampleCipher(scheme: scheme, key: MediaFuzzing.key, encrypt: false)
            else { return }
            var sample = built.bytes
            guard (try? encryptor.process(&sample, subsamples: map, iv: iv)) != nil else {
                preconditionFailure("a map that covers the sample was refused")
            }
            var offset = 0
            for subsample in map {
                precondition(
                    sample[offset..<(offset + subsample.clear)] == built.bytes[offset..<(offset + subsample.clear)],
                    "a clear byte was encrypted")
                offset += subsample.clear + subsample.protected
            }
            guard (try? decryptor.process(&sample, subsamples: map, iv: iv)) != nil else {
                preconditionFailure("decryption refused what encryption accepted")
            }
            precondition(sample == built.bytes, "\(scheme) encryption is not undone by its decryption")
        }
    }
}
