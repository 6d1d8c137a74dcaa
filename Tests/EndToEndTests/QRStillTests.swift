import Foundation
import Testing

/// `media/qr-still.png` is a real QR code (made by `media/make-fixtures.sh` with qrencode) holding an EPC
/// payment with made-up values, and zbarimg reads that exact text from the still, from the clear
/// package's frames and from the SAMPLE-AES package's frames once decrypted, but not from the encrypted
/// segment decoded without the key.
@Suite(.timeLimit(.minutes(30))) struct QRStillTests {
    /// The text `make-fixtures.sh` encodes: an EPC QR (SEPA credit transfer), version 002, UTF-8.
    static let paymentText =
        "BCD\n002\n1\nSCT\n\nGuardPlay Test Payee\nXX00GPLY00000000000015\nEUR12.50\n\n\nFixture only - not a real account"

    /// zbarimg's reading of `picture`: its exit status and the raw data of the codes it found.
    private func scan(_ picture: String) throws -> ProcessResult {
        try run("/usr/bin/zbarimg", ["--nodbus", "--raw", "--quiet", picture])
    }

    /// The first video frame ffmpeg decodes from `input`, written as PNG (nil when ffmpeg decodes none).
    private func firstFrame(_ input: String, _ directory: TemporaryDirectory, options: [String] = []) throws
        -> String?
    {
        let picture = directory.path("frame-\(UUID().uuidString).png")
        let decoded = try ffmpeg(options + ["-i", input, "-map", "0:v:0", "-frames:v", "1", picture])
        guard decoded.status == 0, FileManager.default.fileExists(atPath: picture) else { return nil }
        return picture
    }

    /// The still packaged into `directory` with the test key and `extra` options; the output's path.
    private func packagedStill(_ directory: TemporaryDirectory, _ extra: [String] = []) throws -> String {
        let output = directory.path("out")
        let packaged = try package(fixture("qr-still.png"), output, extra)
        try #require(packaged.status == 0, "\(packaged.stderr)")
        return output
    }

    /// zbarimg reads exactly one code, the payment text (it ends each code's data with a newline).
    private func expectPayment(in picture: String) throws {
        let scanned = try scan(picture)
        #expect(scanned.status == 0, "zbarimg found no code in \(picture): \(scanned.stderr)")
        #expect(scanned.stdout == Self.paymentText + "\n", "zbarimg read \(scanned.stdout.debugDescription)")
    }

    @Test func theFixtureIsAQRCodeOfThePayment() throws {
        try expectPayment(in: fixture("qr-still.png"))
    }

    @Test func aFrameOfTheClearPackageHoldsThePayment() throws {
        let directory = try TemporaryDirectory()
        let output = try packagedStill(directory, ["--encryption", "none"])
        // The segment itself, as the keyless control below reads the encrypted one.
        let picture = try #require(try firstFrame(output + "/video_00000.ts", directory))
        try expectPayment(in: picture)
    }

    /// Our own decryptor (`verify --source`) finds every decrypted access unit equal to a re-encode of the
    /// still, and the frames FFmpeg decodes after decrypting with the playlist's key read as the payment.
    @Test func aDecryptedFrameOfTheSampleAESPackageHoldsThePayment() throws {
        let directory = try TemporaryDirectory()
        let output = try packagedStill(directory)
        let verified = try guardPlay(["verify", output, "--source", fixture("qr-still.png"), "--key", testKey])
        #expect(verified.status == 0, "\(verified.stdout)")
        #expect(verified.stdout.contains("video h264  frames 250  "), "\(verified.stdout)")
        let picture = try #require(
            try firstFrame(output + "/master.m3u8", directory, options: ["-allowed_extensions", "ALL"]))
        try expectPayment(in: picture)
    }

    /// The negative control: the same segment of the SAMPLE-AES package, decoded without the key, shows
    /// no readable code. FFmpeg reads stream type 0xDB as H.264, conceals the encrypted slices' errors and
    /// still gives a picture (flat grey), so zbarimg does get something to scan.
    @Test func theEncryptedSegmentWithoutTheKeyHoldsNoCode() throws {
        let directory = try TemporaryDirectory()
        let output = try packagedStill(directory)
        let picture = try #require(try firstFrame(output + "/video_00000.ts", directory))
        let scanned = try scan(picture)
        #expect(scanned.status != 0 && scanned.stdout.isEmpty, "zbarimg read \(scanned.stdout.debugDescription)")
    }
}
