import Foundation
import Testing

/// Hostile media made at test time from a real stream: an H.264 SPS rewritten to claim another picture
/// size (issue 9 §4's "11-byte edit"), and a PNG whose IHDR claims 65535×65535.
enum HostileHeaders {
    /// A small Baseline-profile H.264 stream made by ffmpeg: raw Annex-B for `.h264`, otherwise a file
    /// with its `mdat` before its `moov` (so `MP4Boxes` can rewrite it).
    static func smallH264(_ path: String, size: String = "64x64", frames: Int = 25) throws {
        let result = try ffmpeg([
            "-f", "lavfi", "-i", "testsrc=size=\(size):rate=25", "-frames:v", "\(frames)", "-c:v", "libx264",
            "-profile:v", "baseline", "-pix_fmt", "yuv420p", path,
        ])
        try #require(result.status == 0, "ffmpeg: \(result.stderr)")
    }

    /// `sps`, an escaped Baseline SPS NAL unit, with pic_width_in_mbs_minus1 and
    /// pic_height_in_map_units_minus1 rewritten to claim `width`×`height` (multiples of 16).
    static func resized(_ sps: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        var payload: [UInt8] = []
        var zeros = 0
        for byte in sps.dropFirst() {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            payload.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        var bits: [Bool] = []
        for byte in payload {
            for shift in (0..<8).reversed() { bits.append((byte >> UInt8(shift)) & 1 == 1) }
        }
        var position = 0
        func read(_ count: Int) -> Int {
            defer { position += count }
            var value = 0
            for bit in bits[position..<(position + count)] { value = value << 1 | (bit ? 1 : 0) }
            return value
        }
        func readUE() -> Int {
            var leading = 0
            while !bits[position] {
                leading += 1
                position += 1
            }
            position += 1
            return (1 << leading) - 1 + read(leading)
        }
        try #require(read(8) == 66, "the fixture's SPS is not Baseline profile")
        _ = read(16)
        _ = readUE()  // seq_parameter_set_id
        _ = readUE()  // log2_max_frame_num_minus4
        let orderType = readUE()
        try #require(orderType == 0 || orderType == 2, "pic_order_cnt_type \(orderType)")
        if orderType == 0 { _ = readUE() }
        _ = readUE()  // max_num_ref_frames
        _ = read(1)  // gaps_in_frame_num_value_allowed_flag
        let start = position
        _ = readUE()
        _ = readUE()
        func ue(_ value: Int) -> [Bool] {
            let code = value + 1
            let length = Int.bitWidth - code.leadingZeroBitCount
            var field = [Bool](repeating: false, count: length - 1)
            for shift in (0..<length).reversed() { field.append((code >> shift) & 1 == 1) }
            return field
        }
        var rewritten = Array(bits[..<start])
        rewritten += ue(width / 16 - 1)
        rewritten += ue(height / 16 - 1)
        rewritten += bits[position...]
        bits = rewritten
        while bits.last == false { bits.removeLast() }  // the old alignment; the stop bit stays
        while bits.count % 8 != 0 { bits.append(false) }
        var escaped: [UInt8] = [sps[0]]
        zeros = 0
        for index in stride(from: 0, to: bits.count, by: 8) {
            var byte: UInt8 = 0
            for bit in bits[index..<(index + 8)] { byte = byte << 1 | (bit ? 1 : 0) }
            if zeros >= 2 && byte <= 3 {
                escaped.append(3)
                zeros = 0
            }
            escaped.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return escaped
    }

    /// The MP4 at `path` with the SPS in its `avcC` rewritten to claim `width`×`height`.
    static func resizedMP4(_ path: String, width: Int, height: Int) throws -> [UInt8] {
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let type = try #require(file.firstRange(of: Array("avcC".utf8)), "no avcC in \(path)")
        let size = file[(type.lowerBound - 4)..<type.lowerBound].reduce(0) { $0 << 8 | Int($1) }
        let body = Array(file[type.upperBound..<(type.lowerBound - 4 + size)])
        try #require(body[5] & 0x1F == 1, "one SPS expected in avcC")
        let length = Int(body[6]) << 8 | Int(body[7])
        let sps = try resized(Array(body[8..<(8 + length)]), width: width, height: height)
        let newBody =
            Array(body[..<6]) + [UInt8(sps.count >> 8), UInt8(sps.count & 0xFF)] + sps + Array(body[(8 + length)...])
        let rewritten = try MP4Boxes.replacing("avcC", with: newBody, in: file)
        try #require(rewritten.count == file.count + sps.count - length, "the avcC of \(path) was not rewritten")
        return rewritten
    }

    /// The Annex-B stream at `path` with its first SPS rewritten to claim `width`×`height`.
    static func resizedAnnexB(_ path: String, width: Int, height: Int) throws -> [UInt8] {
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let start = try #require(file.firstRange(of: [0, 0, 0, 1, 0x67])).lowerBound + 4
        var end = try #require(file[start...].firstRange(of: [0, 0, 1])).lowerBound
        if file[end - 1] == 0 { end -= 1 }
        let sps = try resized(Array(file[start..<end]), width: width, height: height)
        return Array(file[..<start]) + sps + Array(file[end...])
    }

    /// media/qr-still.png with its IHDR claiming `width`×`height` (and a CRC that matches).
    static func resizedPNG(width: UInt32, height: UInt32) throws -> [UInt8] {
        var file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture("qr-still.png"))))
        try #require(Array(file[12..<16]) == Array("IHDR".utf8))
        for (offset, value) in [(16, width), (20, height)] {
            for byte in 0..<4 { file[offset + byte] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(byte))) }
        }
        let crc = crc32(file[12..<29])
        for byte in 0..<4 { file[29 + byte] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * UInt32(byte))) }
        return file
    }

    /// The CRC-32 PNG chunks carry (ISO 3309, reflected polynomial 0xEDB88320).
    private static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
