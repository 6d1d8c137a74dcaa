import MediaFormats

/// The verifier's readers of the CMAF protection boxes, as `verify` runs them: `tenc` in an init
/// segment, and in a fragment `trun` (with the `tfhd` defaults), then `senc` against trun's sample
/// sizes, `saiz` and `saio`, then each sample of the `mdat` decrypted with its record.
enum CMAFVerifyFuzzing {
    /// Bytes before the child boxes of a sample entry or `stsd`, as the verifier skips them.
    static let headers = ["stsd": 8, "encv": 78, "avc1": 78, "hvc1": 78, "enca": 28, "mp4a": 28]

    static func verify(_ data: UnsafeRawBufferPointer) {
        let bytes = Array(data)
        var found: [Box] = []
        var budget = 4_096
        collect(bytes, range: nil, depth: 0, budget: &budget, into: &found)
        var ivSizes: Set<Int> = [0, 8]
        for box in found where box.type == "tenc" {
            guard let tenc = try? TrackEncryptionBox(bytes, box: box, structure: "fuzz") else { continue }
            precondition(tenc.keyID.count == 16 && tenc.cryptBlocks <= 15 && tenc.skipBlocks <= 15)
            let used = 4 + 4 + 16 + (tenc.perSampleIVSize == 0 ? 1 + tenc.constantIV.count : 0)
            precondition(used <= box.body.count, "tenc read \(used) bytes of a \(box.body.count)-byte body")
            ivSizes.insert(tenc.perSampleIVSize)
        }
        for traf in found where traf.type == "traf" {
            var reader = BoxReader(bytes, box: traf, structure: "fuzz")
            guard let children = try? reader.boxes() else { continue }
            for ivSize in ivSizes.sorted() { fragment(bytes, traf: traf, children: children, ivSize: ivSize) }
        }
    }

    /// Every box of `range`, into `found`, descending into containers and sample entries, at most 16 deep
    /// and `budget` boxes in all.
    private static func collect(
        _ bytes: [UInt8], range: Range<Int>?, depth: Int, budget: inout Int, into found: inout [Box]
    ) {
        var reader = BoxReader(bytes, range: range, structure: "fuzz")
        guard let boxes = try? reader.boxes() else { return }
        for box in boxes {
            budget -= 1
            guard budget > 0 else { return }
            found.append(box)
            let header = headers[box.type] ?? 0
            if depth < 16, CMAFFuzzing.containers.contains(box.type) || header > 0, box.body.count >= header {
                collect(
                    bytes, range: (box.body.lowerBound + header)..<box.body.upperBound, depth: depth + 1,
                    budget: &budget, into: &found)
            }
        }
    }

    /// One `traf`'s tables, each checked to stay inside its box and agree with the others.
    private static func fragment(_ bytes: [UInt8], traf: Box, children: [Box], ivSize: Int) {
        var defaultDuration: UInt32 = 0
        var defaultSize: UInt32 = 0
        if let tfhd = children.first(where: { $0.type == "tfhd" }) {
            var reader = BoxReader(bytes, box: tfhd, structure: "fuzz")
            guard let flags = try? reader.versionAndFlags().flags, (try? reader.u32()) != nil else { return }
            if flags & 0x01 != 0 { guard (try? reader.u64()) != nil else { return } }
            if flags & 0x02 != 0 { guard (try? reader.u32()) != nil else { return } }
            if flags & 0x08 != 0 { defaultDuration = (try? reader.u32()) ?? 0 }
            if flags & 0x10 != 0 { defaultSize = (try? reader.u32()) ?? 0 }
        }
        guard let trunBox = children.first(where: { $0.type == "trun" }),
            let run = try? TrackRunBox(
                bytes, box: trunBox, structure: "fuzz", defaultDuration: defaultDuration, defaultSize: defaultSize)
        else { return }
        precondition(run.durations.count == run.sizes.count, "trun's tables differ in length")
        precondition(
            run.sizes.count <= trunBox.body.count / 4 + 1,
            "\(run.sizes.count) samples in a \(trunBox.body.count)-byte trun")
        precondition(run.sizes.allSatisfy { $0 >= 0 })
        guard let sencBox = children.first(where: { $0.type == "senc" }),
            let senc = try? SampleEncryptionBox(
                bytes, box: sencBox, structure: "fuzz", ivSize: ivSize, sampleSizes: run.sizes)
        else { return }
        precondition(senc.records.count == run.sizes.count && senc.recordSizes.count == run.sizes.count)
        precondition(sencBox.body.contains(senc.firstRecord) || senc.firstRecord == sencBox.range.upperBound)
        precondition(
            senc.firstRecord + senc.recordSizes.reduce(0, +) == sencBox.range.upperBound,
            "senc's records do not fill it")
        for (index, record) in senc.records.enumerated() {
            precondition(record.iv.count == ivSize)
            precondition(record.subsamples.allSatisfy { $0.clear >= 0 && $0.clear <= 65_535 && $0.protected >= 0 })
            if senc.flags & 2 != 0 {
                precondition(record.subsamples.reduce(0) { $0 + $1.clear + $1.protected } == run.sizes[index])
            }
        }
        if let saizBox = children.first(where: { $0.type == "saiz" }),
            let saiz = try? SampleAuxiliaryInformationSizes(
                bytes, box: saizBox, structure: "fuzz", sampleCount: run.sizes.count)
        {
            precondition(saiz.sizes.count == run.sizes.count && saiz.sizes.allSatisfy { (0...255).contains($0) })
            if saiz.sizes == senc.recordSizes {
                precondition(saiz.sizes.reduce(0, +) <= sencBox.body.count - 8, "saiz sizes add up past senc")
            }
        }
        if let saioBox = children.first(where: { $0.type == "saio" }),
            let saio = try? SampleAuxiliaryInformationOffsets(bytes, box: saioBox, structure: "fuzz")
        {
            precondition(saio.offsets.count <= saioBox.body.count / 4 && saio.offsets.allSatisfy { $0 >= 0 })
        }
        decrypt(bytes, traf: traf, run: run, records: senc.records)
    }

    /// When the fragment is one `moof` and `mdat` whose payload the `trun` sizes cover, each sample
    /// decrypted with its record in both schemes, as `verify` decrypts them.
    private static func decrypt(_ bytes: [UInt8], traf: Box, run: TrackRunBox, records: [SampleEncryptionBox.Record]) {
        var top = BoxReader(bytes, structure: "fuzz")
        guard let boxes = try? top.boxes(), boxes.count == 2, boxes[0].type == "moof", boxes[1].type == "mdat",
            boxes[0].range.contains(traf.range.lowerBound),
            run.sizes.reduce(0, +) == boxes[1].body.count
        else { return }
        var start = boxes[1].body.lowerBound
        for (index, size) in run.sizes.enumerated() {
            let sample = Array(bytes[start..<(start + size)])
            start += size
            // verify takes cbcs with the constant IV (1:9 for video, 0:0 for audio) and cenc with 8-byte IVs.
            var passes: [(CENCScheme, [UInt8], Int, Int)] = []
            if records[index].iv.isEmpty { passes += [(.cbcs, MediaFuzzing.iv, 1, 9), (.cbcs, MediaFuzzing.iv, 0, 0)] }
            if records[index].iv.count == 8 { passes.append((.cenc, records[index].iv, 0, 0)) }
            for (scheme, iv, crypt, skip) in passes {
                guard let cipher = try? CENCSampleCipher(scheme: scheme, key: MediaFuzzing.key, encrypt: false)
                else { continue }
                var copy = sample
                if (try? cipher.process(&copy, subsamples: records[index].subsamples, iv: iv, crypt: crypt, skip: skip))
                    != nil
                {
                    precondition(copy.count == sample.count, "decryption changed a sample's length")
                }
            }
        }
    }
}
