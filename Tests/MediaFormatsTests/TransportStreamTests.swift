import Testing

@testable import MediaFormats

@Suite struct TransportStreamTests {
    private func writer(encrypted: Bool = true) throws -> TransportStreamWriter {
        let setup = AudioSetupInformation(audioType: "zaac", setupData: [0x12, 0x10])
        return try TransportStreamWriter(
            tracks: [
                TransportStreamTrack(
                    pid: 0x100, streamType: ElementaryCodec.h264.streamType(encrypted: encrypted), streamID: 0xE0,
                    descriptors: TransportStreamDescriptor.privateDataIndicator("zavc")),
                TransportStreamTrack(
                    pid: 0x101, streamType: ElementaryCodec.aac.streamType(encrypted: encrypted), streamID: 0xC0,
                    descriptors: TransportStreamDescriptor.privateDataIndicator("aacd")
                        + TransportStreamDescriptor.registration("apad", setup.serialized())),
            ], pcrPID: 0x100)
    }

    @Test func crcIsTheMPEG2CheckValue() {
        #expect(MPEGCRC32.checksum(Array("123456789".utf8)) == 0x0376_E6E7)
    }

    @Test func writesThePATFFmpegWritesForOneProgram() throws {
        var ts = try writer()
        let buffer = ByteBuffer()
        ts.writeProgramTables(to: buffer)
        let bytes = buffer.bytes
        #expect(bytes.count == 376)
        let pat: [UInt8] = [
            0x47, 0x40, 0x00, 0x10, 0x00, 0x00, 0xB0, 0x0D, 0x00, 0x01, 0xC1, 0x00, 0x00, 0x00, 0x01, 0xF0, 0x00,
            0x2A, 0xB1, 0x04, 0xB2,
        ]
        #expect(Array(bytes[0..<pat.count]) == pat)
        #expect(bytes[pat.count..<188].allSatisfy { $0 == 0xFF })
    }

    @Test func signalsSampleAESInAPMTOfOnePacket() throws {
        var ts = try writer()
        let buffer = ByteBuffer()
        ts.writeProgramTables(to: buffer)
        var reader = TransportStreamReader(name: "tables")
        _ = try buffer.withUnsafeBytes { try reader.read($0) }
        #expect(reader.issues.isEmpty)
        let map = try #require(reader.programMap)
        #expect(map.pcrPID == 0x100)
        #expect(map.streams.map(\.streamType) == [0xDB, 0xCF])
        #expect(map.streams[0].descriptors == [0x0F, 4] + Array("zavc".utf8))
        let audio = try #require(map.streams[1].parsedDescriptors)
        #expect(audio.map(\.tag) == [0x0F, 0x05])
        #expect(audio[1].body == Array("apad".utf8) + Array("zaac".utf8) + [0, 0, 1, 2, 0x12, 0x10])
    }

    @Test func refusesAPMTThatWouldSpanPackets() {
        let big = [UInt8](repeating: 0, count: 100)
        #expect(throws: FormatError.self) {
            try TransportStreamWriter(
                tracks: [
                    TransportStreamTrack(pid: 0x100, streamType: 0x1B, streamID: 0xE0, descriptors: big),
                    TransportStreamTrack(pid: 0x101, streamType: 0x0F, streamID: 0xC0, descriptors: big),
                ], pcrPID: 0x100)
        }
    }

    /// Payload sizes around one packet's room: 184 minus the PES header (14 or 19 bytes), the PCR
    /// adaptation field (8 bytes) and stuffing.
    @Test(arguments: [1, 150, 157, 158, 159, 164, 165, 166, 169, 170, 171, 183, 184, 185, 1_000, 70_000])
    func packetizesAndReassemblesPES(_ size: Int) throws {
        var ts = try writer(encrypted: false)
        let buffer = ByteBuffer()
        ts.writeProgramTables(to: buffer)
        let video = Reference.bytes(size, seed: UInt32(size))
        let audio = Reference.bytes(size % 500 + 1, seed: 9)
        try video.withUnsafeBytes {
            try ts.writePES(
                track: 0, payload: $0, pts: 200_000, dts: 197_000, pcr: 150_000 * 300 + 17, randomAccess: true,
                to: buffer)
        }
        try audio.withUnsafeBytes {
            try ts.writePES(track: 1, payload: $0, pts: 199_000, dts: nil, pcr: nil, randomAccess: false, to: buffer)
        }
        try video.withUnsafeBytes {
            try ts.writePES(
                track: 0, payload: $0, pts: (1 << 33) + 5, dts: nil, pcr: nil, randomAccess: false, to: buffer)
        }
        #expect(buffer.count % 188 == 0)
        var reader = TransportStreamReader(name: "pes")
        let packets = try buffer.withUnsafeBytes { try reader.read($0) } + reader.finish()
        #expect(reader.issues.isEmpty)
        let byPID = Dictionary(grouping: packets, by: \.pid)
        let videoPackets = try #require(byPID[0x100])
        #expect(videoPackets.count == 2)
        #expect(videoPackets[0].payload == video && videoPackets[1].payload == video)
        #expect(videoPackets[0].pts == 200_000 && videoPackets[0].dts == 197_000)
        #expect(videoPackets[0].pcr == 150_000 * 300 + 17 && videoPackets[0].randomAccess)
        #expect(videoPackets[1].pts == 5 && videoPackets[1].dts == nil && videoPackets[1].pcr == nil)
        let audioPacket = try #require(byPID[0x101]?.first)
        #expect(audioPacket.payload == audio && audioPacket.pts == 199_000 && audioPacket.streamID == 0xC0)
    }

    @Test func readerFlagsContinuityJumpsBadCRCsAndNonTS() throws {
        var ts = try writer()
        let buffer = ByteBuffer()
        ts.writeProgramTables(to: buffer)
        try Reference.bytes(400, seed: 1).withUnsafeBytes {
            try ts.writePES(track: 0, payload: $0, pts: 1, dts: nil, pcr: nil, randomAccess: true, to: buffer)
        }
        var bytes = buffer.bytes
        bytes[376 + 188 + 3] = (bytes[376 + 188 + 3] & 0xF0) | ((bytes[376 + 188 + 3] + 5) & 0x0F)
        var reader = TransportStreamReader(name: "jump")
        _ = try bytes.withUnsafeBytes { try reader.read($0) }
        #expect(reader.issues.contains { $0.contains("continuity counter") })

        var corrupt = buffer.bytes
        corrupt[20] ^= 0xFF  // inside the PAT's CRC
        var second = TransportStreamReader(name: "crc")
        _ = try corrupt.withUnsafeBytes { try second.read($0) }
        #expect(second.issues.contains { $0.contains("CRC") })

        var unsynced = buffer.bytes
        unsynced[188] = 0x48
        var third = TransportStreamReader(name: "sync")
        #expect(throws: FormatError.self) { try unsynced.withUnsafeBytes { try third.read($0) } }
        #expect(throws: FormatError.self) { try Array(buffer.bytes.dropLast()).withUnsafeBytes { try third.read($0) } }
    }
}

/// Every length byte the writers fill is checked: an over-long field throws, never traps.
@Suite struct TransportStreamLimitTests {
    @Test func audioSetupDataUpTo255BytesSerialisesAndLongerThrows() throws {
        let longest = AudioSetupInformation(audioType: "zaac", setupData: [UInt8](repeating: 7, count: 255))
        let bytes = try longest.serialized()
        #expect(bytes.count == 8 + 255 && bytes[7] == 255)
        #expect(try AudioSetupInformation(bytes: bytes) == longest)
        let tooLong = AudioSetupInformation(audioType: "zaac", setupData: [UInt8](repeating: 7, count: 256))
        #expect(throws: FormatError.self) { try tooLong.serialized() }
    }

    @Test func registrationDescriptorsUpTo251AdditionalBytesAndLongerThrows() throws {
        let longest = try TransportStreamDescriptor.registration("apad", [UInt8](repeating: 1, count: 251))
        #expect(longest.count == 2 + 255 && longest[1] == 255)
        #expect(throws: FormatError.self) {
            try TransportStreamDescriptor.registration("apad", [UInt8](repeating: 1, count: 252))
        }
    }

    @Test func aPMTThatCannotFitOnePacketThrows() {
        let descriptors = try? TransportStreamDescriptor.registration("apad", [UInt8](repeating: 1, count: 200))
        #expect(throws: FormatError.self) {
            try TransportStreamWriter(
                tracks: [TransportStreamTrack(pid: 0x101, streamType: 0xCF, streamID: 0xC0, descriptors: descriptors!)],
                pcrPID: 0x101)
        }
    }

    @Test func theWriterRefusesAPESLargerThanTheReaderAccepts() throws {
        var ts = try TransportStreamWriter(
            tracks: [TransportStreamTrack(pid: 0x100, streamType: 0x1B, streamID: 0xE0, descriptors: [])],
            pcrPID: 0x100)
        // 14 bytes of PES header (with PTS) plus the payload must stay within the limit.
        let payload = [UInt8](repeating: 0, count: TransportStreamWriter.maximumPESSize - 13)
        #expect(throws: FormatError.self) {
            try payload.withUnsafeBytes {
                try ts.writePES(track: 0, payload: $0, pts: 0, dts: nil, pcr: nil, randomAccess: true, to: ByteBuffer())
            }
        }
    }

    @Test func theReaderDropsAPESThatOutgrowsItsLimitAndReadsTheNextOne() throws {
        var ts = try TransportStreamWriter(
            tracks: [TransportStreamTrack(pid: 0x100, streamType: 0x1B, streamID: 0xE0, descriptors: [])],
            pcrPID: 0x100)
        let buffer = ByteBuffer()
        ts.writeProgramTables(to: buffer)
        let big = Reference.bytes(3_000, seed: 5)
        let small = Reference.bytes(500, seed: 6)
        for (payload, pts) in [(big, Int64(0)), (small, 3_000)] {
            try payload.withUnsafeBytes {
                try ts.writePES(track: 0, payload: $0, pts: pts, dts: nil, pcr: nil, randomAccess: true, to: buffer)
            }
        }
        var reader = TransportStreamReader(name: "cap", maximumPESSize: 1_000)
        let packets = try buffer.withUnsafeBytes { try reader.read($0) } + reader.finish()
        #expect(packets.count == 1 && packets.first?.payload == small && packets.first?.pts == 3_000)
        #expect(reader.issues.count == 1)
        #expect(reader.issues.first?.contains("grows past 1000 bytes") == true, "\(reader.issues)")
    }
}

@Suite struct PackedAudioTests {
    @Test func writesTheTimestampAndAudioDescriptionPRIVFrames() throws {
        let setup = AudioSetupInformation(audioType: "zaac", setupData: [0x12, 0x10])
        let tag = try PackedAudio.id3Tag(timestamp: (1 << 33) + 0x1_0203_0405, setup: setup.serialized())
        #expect(Array(tag[0..<6]) == Array("ID3".utf8) + [4, 0, 0])
        let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8)
        let stampFrame =
            Array("PRIV".utf8) + [0, 0, 0, UInt8(owner.count + 9), 0, 0] + owner + [0]
            + [0, 0, 0, 1, 0x02, 0x03, 0x04, 0x05]
        #expect(Array(tag[10..<(10 + stampFrame.count)]) == stampFrame)
        let parsed = try PackedAudio.parseTag(tag + [0xFF, 0xF1])
        #expect(parsed.length == tag.count)
        #expect(parsed.privateFrames[PackedAudio.timestampOwner] == [0, 0, 0, 1, 2, 3, 4, 5])
        #expect(try AudioSetupInformation(bytes: parsed.privateFrames[PackedAudio.audioDescriptionOwner]!) == setup)
    }

    @Test func refusesSegmentsWithoutAValidTag() {
        #expect(throws: FormatError.self) { try PackedAudio.parseTag([0xFF, 0xF1, 0x50, 0x80]) }
        #expect(throws: FormatError.self) { try PackedAudio.parseTag(Array("ID3".utf8) + [4, 0, 0, 0, 0, 1, 0]) }
    }
}
