/// AC-3 and E-AC-3 syncframes (ATSC A/52): finding them in an access unit and describing them for the
/// SAMPLE-AES audio setup information.
public enum AC3SyncFrame: Sendable {
    /// Bytes needed to read a syncframe's header fields.
    public static let minimumHeaderSize = 6
    private static let bitRates = [
        32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640,
    ]
    private static let sampleRates = [48000, 44100, 32000]

    /// The length in bytes of the syncframe at the start of `bytes`.
    public static func length(_ bytes: UnsafeRawBufferPointer) throws(FormatError) -> Int {
        guard bytes.count >= minimumHeaderSize else {
            throw FormatError("AC-3 syncframe", "only \(bytes.count) bytes, \(minimumHeaderSize) needed")
        }
        guard bytes[0] == 0x0B && bytes[1] == 0x77 else {
            throw FormatError("AC-3 syncframe", "no 0B77 sync word (found \(Array(bytes[0..<2]).hexString))")
        }
        let bsid = bytes[5] >> 3
        if bsid > 10 {
            guard bsid <= 16 else { throw FormatError("E-AC-3 syncframe", "bsid \(bsid) is not AC-3 or E-AC-3") }
            let words = Int(bytes[2] & 0x07) << 8 | Int(bytes[3])
            return (words + 1) * 2
        }
        let fscod = Int(bytes[4] >> 6)
        let frmsizecod = Int(bytes[4] & 0x3F)
        guard fscod < 3, frmsizecod < 38 else {
            throw FormatError("AC-3 syncframe", "reserved fscod \(fscod) or frmsizecod \(frmsizecod)")
        }
        // Words per syncframe: 1536 samples at the bit rate, 16 bits a word; 44.1 kHz rounds down and
        // odd codes add one word.
        let rate = bitRates[frmsizecod / 2]
        let words = rate * 1000 * 96 / sampleRates[fscod] + (fscod == 1 ? frmsizecod & 1 : 0)
        return words * 2
    }

    /// The ranges of the consecutive syncframes that make up `bytes` (one AC-3 frame, or the
    /// independent and dependent substreams of an E-AC-3 access unit).
    public static func frames(in bytes: UnsafeRawBufferPointer) throws(FormatError) -> [Range<Int>] {
        var frames: [Range<Int>] = []
        var offset = 0
        while offset < bytes.count {
            let length = try length(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            guard length <= bytes.count - offset else {
                throw FormatError(
                    "AC-3 syncframe", "frame of \(length) bytes overruns its packet (\(bytes.count - offset) left)")
            }
            frames.append(offset..<(offset + length))
            offset += length
        }
        return frames
    }

    /// The payload of an AC3SpecificBox (`dac3`, ETSI TS 102 366 §F.4) describing the AC-3 syncframe at
    /// the start of `bytes`: its fscod, bsid, bsmod, acmod, lfeon and bit rate code.
    public static func ac3SpecificBox(_ bytes: UnsafeRawBufferPointer) throws(FormatError) -> [UInt8] {
        let frame = Array(bytes.prefix(8))
        var reader = BitReader(frame, structure: "AC-3 bsi")
        try reader.skip(32)  // syncword, crc1
        let fscod = try reader.read(2)
        let frmsizecod = try reader.read(6)
        let bsid = try reader.read(5)
        guard fscod < 3, frmsizecod < 38, bsid <= 10 else {
            throw FormatError("AC-3 bsi", "fscod \(fscod), frmsizecod \(frmsizecod) or bsid \(bsid) is not AC-3's")
        }
        let bsmod = try reader.read(3)
        let acmod = try reader.read(3)
        if acmod & 1 == 1 && acmod != 1 { try reader.skip(2) }  // cmixlev
        if acmod & 4 == 4 { try reader.skip(2) }  // surmixlev
        if acmod == 2 { try reader.skip(2) }  // dsurmod
        let lfeon = try reader.read(1)
        var writer = BitWriter()
        writer.write(fscod, bits: 2)
        writer.write(bsid, bits: 5)
        writer.write(bsmod, bits: 3)
        writer.write(acmod, bits: 3)
        writer.write(lfeon, bits: 1)
        writer.write(frmsizecod >> 1, bits: 5)  // bit_rate_code
        writer.write(0, bits: 5)  // reserved
        return writer.bytes
    }

    /// The sample rate of the AC-3 or E-AC-3 syncframe at the start of `bytes`.
    public static func sampleRate(_ bytes: UnsafeRawBufferPointer) throws(FormatError) -> Int {
        _ = try length(bytes)
        let fscod = Int(bytes[4] >> 6)
        guard bytes[5] >> 3 > 10 else { return sampleRates[fscod] }
        if fscod < 3 { return sampleRates[fscod] }
        let fscod2 = Int(bytes[4] >> 4) & 3
        guard fscod2 < 3 else { throw FormatError("E-AC-3 bsi", "reserved fscod2") }
        return sampleRates[fscod2] / 2
    }

    /// The payload of an EC3SpecificBox (`dec3`, ETSI TS 102 366 §F.6) describing the E-AC-3 access
    /// unit `bytes`: the setup data of the SAMPLE-AES audio setup information for E-AC-3.
    public static func ec3SpecificBox(_ bytes: UnsafeRawBufferPointer) throws(FormatError) -> [UInt8] {
        struct Independent {
            var fscod: UInt32, bsid: UInt32, acmod: UInt32, lfeon: UInt32
            var dependents: UInt32 = 0
            var channelLocations: UInt32 = 0
        }
        var substreams: [Independent] = []
        var bitsPerSecond = 0
        for range in try frames(in: bytes) {
            let frame = Array(bytes[range])
            var reader = BitReader(frame, structure: "E-AC-3 bsi")
            try reader.skip(16)
            let streamType = try reader.read(2)
            try reader.skip(3)  // substreamid
            try reader.skip(11)  // frmsiz
            var fscod = try reader.read(2)
            var blocks = 6
            if fscod == 3 {
                fscod = try reader.read(2)
                guard fscod < 3 else { throw FormatError("E-AC-3 bsi", "reserved fscod2") }
            } else {
                blocks = [1, 2, 3, 6][Int(try reader.read(2))]
            }
            let acmod = try reader.read(3)
            let lfeon = try reader.read(1)
            let bsid = try reader.read(5)
            guard bsid > 10 else { throw FormatError("E-AC-3 bsi", "bsid \(bsid) is AC-3 inside an E-AC-3 unit") }
            try reader.skip(5)  // dialnorm
            if try reader.flag() { try reader.skip(8) }  // compr
            if acmod == 0 {
                try reader.skip(5)
                if try reader.flag() { try reader.skip(8) }
            }
            var channelMap: UInt32 = 0
            if streamType == 1, try reader.flag() { channelMap = try reader.read(16) }
            let sampleRate = [48000, 44100, 32000][Int(fscod)]
            bitsPerSecond += range.count * 8 * sampleRate / (blocks * 256)
            if streamType == 1 {
                guard !substreams.isEmpty else {
                    throw FormatError("E-AC-3 access unit", "a dependent substream comes before any independent one")
                }
                substreams[substreams.count - 1].dependents += 1
                substreams[substreams.count - 1].channelLocations |= (channelMap >> 5) & 0x1FF
            } else {
                substreams.append(Independent(fscod: fscod, bsid: bsid, acmod: acmod, lfeon: lfeon))
            }
        }
        guard !substreams.isEmpty, substreams.count <= 8 else {
            throw FormatError("E-AC-3 access unit", "\(substreams.count) independent substreams (1–8 allowed)")
        }
        var writer = BitWriter()
        writer.write(UInt32(min(bitsPerSecond / 1000, 8191)), bits: 13)
        writer.write(UInt32(substreams.count - 1), bits: 3)
        for substream in substreams {
            writer.write(substream.fscod, bits: 2)
            writer.write(substream.bsid, bits: 5)
            writer.write(0, bits: 1)  // reserved
            writer.write(0, bits: 1)  // asvc
            writer.write(0, bits: 3)  // bsmod: main audio service
            writer.write(substream.acmod, bits: 3)
            writer.write(substream.lfeon, bits: 1)
            writer.write(0, bits: 3)  // reserved
            writer.write(min(substream.dependents, 15), bits: 4)
            if substream.dependents > 0 {
                writer.write(substream.channelLocations, bits: 9)
            } else {
                writer.write(0, bits: 1)
            }
        }
        return writer.bytes
    }
}
