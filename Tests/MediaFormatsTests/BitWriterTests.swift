import ProcessTestSupport
import Testing

@testable import MediaFormats

/// `BitWriter` fills a byte's free bits at a time; `BitReader`, which reads one bit at a time, must read
/// back every field as it was written, at every alignment.
struct BitWriterTests {
    @Test func fieldsOfEveryWidthReadBackAtEveryAlignment() throws {
        var random = SplitMix(seed: 0x6269_7477)
        var writer = BitWriter()
        var fields: [(value: UInt32, bits: Int)] = []
        for _ in 0..<4_000 {
            let bits = Int.random(in: 0...32, using: &random)
            let value = UInt32.random(in: 0...UInt32.max, using: &random)
            writer.write(value, bits: bits)
            fields.append((value, bits))
        }
        let total = fields.reduce(0) { $0 + $1.bits }
        #expect(writer.bitCount == total && writer.bytes.count == (total + 7) / 8)
        var reader = BitReader(writer.bytes, structure: "written")
        for (index, field) in fields.enumerated() {
            let mask: UInt32 = field.bits == 32 ? .max : (1 << field.bits) - 1
            let read = try reader.read(field.bits)
            #expect(read == field.value & mask, "field \(index): \(field.bits) bits of \(field.value)")
        }
        // The partial last byte is padded with zero bits.
        let padding = try reader.read(reader.remaining)
        #expect(padding == 0)
    }

    /// A field wider than 32 bits is zero bits, then the value: how `ue(v)`'s leading zeros are written.
    @Test func wideFieldsAndExpGolombCodes() throws {
        var writer = BitWriter()
        writer.write(1, bits: 3)
        writer.write(0xFFFF_FFFF, bits: 40)
        for value in [0, 1, 2, 7, 255, 65_535, 1 << 20] { writer.writeUnsignedExpGolomb(value) }
        for value in [0, 1, -1, 300, -300] { writer.writeSignedExpGolomb(value) }
        var reader = BitReader(writer.bytes, structure: "written")
        let head = [try reader.read(3), try reader.read(8), try reader.read(32)]
        #expect(head == [1, 0, 0xFFFF_FFFF])
        var unsigned: [UInt32] = []
        for _ in 0..<7 { unsigned.append(try reader.unsignedExpGolomb()) }
        #expect(unsigned == [0, 1, 2, 7, 255, 65_535, 1 << 20])
        var signed: [Int32] = []
        for _ in 0..<5 { signed.append(try reader.signedExpGolomb()) }
        #expect(signed == [0, 1, -1, 300, -300])
        #expect(reader.remaining < 8)
    }
}
