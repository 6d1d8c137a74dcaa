import MediaFormats
import Testing

/// The MPD text: one Period for one key, and a Period per key period under rotation, each with its own
/// key ID, init segment and numbered segments.
@Suite struct DASHManifestTests {
    static func video(initialization: String, startNumber: Int, segments: [(start: UInt64, duration: UInt64)])
        -> DASHManifest.Representation
    {
        var representation = DASHManifest.Representation(
            id: "video", contentType: "video", codecs: "avc1.64001e", bandwidth: 1_000_000, width: 640, height: 360,
            timescale: 90_000, presentationTimeOffset: segments.first?.start ?? 0,
            initialization: initialization, media: "video_$Number%05d$.m4s", segments: segments)
        representation.startNumber = startNumber
        return representation
    }

    @Test func oneKeyIsOnePeriodFromZero() {
        let manifest = DASHManifest(
            representations: [
                Self.video(initialization: "video_init.mp4", startNumber: 0, segments: [(126_000, 180_000)])
            ],
            duration: 2, scheme: "cbcs", keyID: Array(0..<16))
        let text = manifest.render()
        #expect(text.components(separatedBy: "<Period ").count == 2)
        #expect(text.contains("<Period id=\"0\" start=\"PT0S\">"))
        #expect(text.contains("cenc:default_KID=\"00010203-0405-0607-0809-0a0b0c0d0e0f\""))
        #expect(text.contains("initialization=\"video_init.mp4\" media=\"video_$Number%05d$.m4s\" startNumber=\"0\""))
    }

    @Test func keyPeriodsArePeriodsWithTheirOwnKeyInitAndNumbers() throws {
        let first = DASHManifest.Period(
            start: 0, keyID: Array(repeating: 0x11, count: 16),
            representations: [
                Self.video(
                    initialization: "video_init.mp4", startNumber: 0,
                    segments: [(126_000, 180_000), (306_000, 180_000)])
            ])
        let second = DASHManifest.Period(
            start: 4, keyID: Array(repeating: 0x22, count: 16),
            representations: [
                Self.video(initialization: "video_init_p1.mp4", startNumber: 2, segments: [(486_000, 90_000)])
            ])
        let text = DASHManifest(
            periods: [first, second], duration: 5, scheme: "cenc", licenseURL: "https://l.example/?a=1&b=2"
        )
        .render()
        let periods = text.components(separatedBy: "<Period ").dropFirst()
        try #require(periods.count == 2)
        let (one, two) = (periods[periods.startIndex], periods[periods.startIndex + 1])
        #expect(one.hasPrefix("id=\"0\" start=\"PT0.000S\" duration=\"PT4.000S\">"))
        #expect(two.hasPrefix("id=\"1\" start=\"PT4.000S\" duration=\"PT1.000S\">"))
        #expect(one.contains("cenc:default_KID=\"11111111-1111-1111-1111-111111111111\""))
        #expect(two.contains("cenc:default_KID=\"22222222-2222-2222-2222-222222222222\""))
        #expect(!one.contains("2222-2222") && !two.contains("1111-1111"))
        #expect(one.contains("initialization=\"video_init.mp4\"") && one.contains("startNumber=\"0\""))
        #expect(one.contains("<S t=\"126000\" d=\"180000\" r=\"1\"/>"))
        #expect(two.contains("initialization=\"video_init_p1.mp4\"") && two.contains("startNumber=\"2\""))
        #expect(two.contains("presentationTimeOffset=\"486000\"") && two.contains("<S t=\"486000\" d=\"90000\"/>"))
        for period in [one, two] {
            #expect(period.contains("<dashif:Laurl>https://l.example/?a=1&amp;b=2</dashif:Laurl>"))
        }
    }
}
