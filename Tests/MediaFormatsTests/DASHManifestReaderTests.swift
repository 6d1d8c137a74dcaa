import Testing

@testable import MediaFormats

/// The MPD reader (`ParsedDASHManifest` over `MarkupElement`): what the writer writes reads back, and
/// what it never writes is refused with a `FormatError`, never a trap or a huge table.
@Suite struct DASHManifestReaderTests {
    static var manifest: DASHManifest {
        DASHManifest(
            representations: [
                DASHManifest.Representation(
                    id: "video & <1>", contentType: "video", codecs: "avc1.64001f", bandwidth: 1_200_000, width: 640,
                    height: 360, frameRate: 30_000.0 / 1_001, timescale: 90_000, presentationTimeOffset: 12_000,
                    initialization: "video_init.mp4", media: "video_$Number%05d$.m4s",
                    segments: [(12_000, 540_000), (552_000, 540_000), (1_092_000, 540_000), (2_000_000, 7)]),
                DASHManifest.Representation(
                    id: "audio-1", contentType: "audio", codecs: "mp4a.40.2", bandwidth: 128_000, sampleRate: 48_000,
                    channels: 2, language: "en\"'", timescale: 48_000, presentationTimeOffset: 0,
                    initialization: "audio_init.mp4", media: "audio_$Number%05d$.m4s", segments: [(0, 288_000)]),
            ], duration: 18.0205, scheme: "cbcs", keyID: Array(0..<16), licenseURL: "https://keys.example/?a=1&b=2")
    }

    @Test func whatTheWriterWritesReadsBack() throws {
        let parsed = try ParsedDASHManifest(Self.manifest.render())
        #expect(parsed.duration == 18.021 || parsed.duration == 18.020)
        #expect(parsed.periods.count == 1 && parsed.periods[0].id == "0" && parsed.periods[0].start == 0)
        let sets = parsed.periods[0].adaptationSets
        #expect(sets.map(\.contentType) == ["video", "audio"])
        #expect(sets.allSatisfy { $0.scheme == "cbcs" && $0.keyID == Array(0..<16) && $0.clearKey })
        #expect(sets.allSatisfy { $0.licenseURL == "https://keys.example/?a=1&b=2" })
        #expect(sets[1].language == "en\"'")
        let video = try #require(sets[0].representations.first)
        #expect(video.id == "video & <1>" && video.width == 640 && video.height == 360 && video.frameRate == 29.970)
        #expect(video.presentationTimeOffset == 12_000 && video.media == "video_$Number%05d$.m4s")
        #expect(
            video.segments.map { [$0.start, $0.duration] } == [
                [12_000, 540_000], [552_000, 540_000], [1_092_000, 540_000], [2_000_000, 7],
            ])
        let audio = try #require(sets[1].representations.first)
        #expect(audio.channels == 2 && audio.sampleRate == 48_000 && audio.segments.count == 1)
    }

    @Test func readsPeriodsAsAList() throws {
        let text = """
            <MPD type="static" mediaPresentationDuration="PT1M" minBufferTime="PT2S">
            <Period id="p0" start="PT0S"/>
            <!-- the second key period -->
            <Period id='p1' start="PT1M0.5S"/>
            </MPD>
            """
        let parsed = try ParsedDASHManifest(text)
        #expect(parsed.periods.map(\.id) == ["p0", "p1"] && parsed.periods[1].start == 60.5 && parsed.duration == 60)
    }

    @Test(arguments: [
        (
            "<MPD type=\"dynamic\" mediaPresentationDuration=\"PT1S\" minBufferTime=\"PT1S\"><Period id=\"0\" start=\"PT0S\"/></MPD>",
            "static"
        ),
        (
            "<MPD type=\"static\" mediaPresentationDuration=\"PT1S\" minBufferTime=\"PT1S\"><Period id=\"0\" start=\"PT0S\"></MPD>",
            "closes"
        ),
        ("<MPD type=\"static\" type=\"static\"/>", "twice"),
        ("<MPD type=\"static\" mediaPresentationDuration=\"1S\" minBufferTime=\"PT1S\"/>", "duration"),
        ("<MPD type=\"st&nbsp;atic\"/>", "unknown entity"),
        ("<!DOCTYPE MPD><MPD/>", "DOCTYPE"),
        (
            "<MPD type=\"static\" mediaPresentationDuration=\"PT1S\" minBufferTime=\"PT1S\"><Period id=\"0\" start=\"PT0S\"/></MPD><x/>",
            "after the root"
        ),
        (
            "<MPD type=\"static\" mediaPresentationDuration=\"PT1S\" minBufferTime=\"PT1S\"><BaseURL>x</BaseURL></MPD>",
            "unknown element"
        ),
    ])
    func refusesWhatTheWriterNeverWrites(_ text: String, _ reason: String) {
        let error = #expect(throws: FormatError.self) { try ParsedDASHManifest(text) }
        #expect(error?.reason.contains(reason) == true, "\(String(describing: error))")
    }

    /// What `MarkupElement.escaped` writes reads back as the text it was given, in an attribute of either
    /// quote and in character data: specials, tab, line feed and carriage return, non-ASCII. Characters
    /// XML forbids come back as U+FFFD; the text unescaped does not parse at all.
    @Test func escapedTextReadsBackInAttributesAndCharacterData() throws {
        let samples = [
            "a & b < c > d", "say \"hi\" and 'bye'", "line\nbreak\ttab\r\nend", "\u{e9}t\u{e9} \u{1F600}",
            "&amp; already escaped", "", " lead and trail ",
        ]
        for text in samples {
            let escaped = MarkupElement.escaped(text)
            for document in ["<a v=\"\(escaped)\">\(escaped)</a>", "<a v='\(escaped)'>\(escaped)</a>"] {
                let element = try MarkupElement.parse(document, structure: "escaped")
                #expect(element.attributes["v"] == text, "\(document)")
                #expect(element.text == text, "\(document)")
            }
        }
        let controls = try MarkupElement.parse(
            "<a v=\"\(MarkupElement.escaped("x\u{1}y\u{FFFF}"))\"/>", structure: "controls")
        #expect(controls.attributes["v"] == "x\u{FFFD}y\u{FFFD}")
        #expect(throws: FormatError.self) { try MarkupElement.parse("<a v=\"a & \"b\"\"/>", structure: "raw") }
    }

    /// An error inside a timeline names the run by the number of its first segment, and the first unknown
    /// attribute in sorted order.
    @Test func aTimelineErrorNamesItsRun() {
        let text = """
            <MPD type="static" mediaPresentationDuration="PT1S" minBufferTime="PT1S"><Period id="0" start="PT0S">\
            <AdaptationSet id="0" contentType="video" mimeType="video/mp4"><Representation id="v" codecs="c" \
            bandwidth="1"><SegmentTemplate timescale="1" presentationTimeOffset="0" initialization="i" media="m" \
            startNumber="0"><SegmentTimeline><S d="1" r="2"/><S d="1" z="0" y="0"/></SegmentTimeline>\
            </SegmentTemplate></Representation></AdaptationSet></Period></MPD>
            """
        let error = #expect(throws: FormatError.self) { try ParsedDASHManifest(text, structure: "m.mpd") }
        #expect(error?.structure.hasSuffix(" S 3") == true, "\(String(describing: error))")
        #expect(error?.reason == "unknown attribute y", "\(String(describing: error))")
    }

    @Test func hostileSizesAreBounded() {
        let deep = String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40)
        #expect(throws: FormatError.self) { try MarkupElement.parse(deep, structure: "deep") }
        let head = """
            <MPD type="static" mediaPresentationDuration="PT1S" minBufferTime="PT1S"><Period id="0" start="PT0S">\
            <AdaptationSet id="0" contentType="video" mimeType="video/mp4"><Representation id="v" codecs="c" \
            bandwidth="1"><SegmentTemplate timescale="1" presentationTimeOffset="0" initialization="i" media="m" \
            startNumber="0"><SegmentTimeline>
            """
        let tail = "</SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period></MPD>"
        // 2^63 repeats would be an endless timeline; a negative r (until the end) is not what the writer writes.
        for run in [
            "<S d=\"1\" r=\"9223372036854775807\"/>", "<S d=\"1\" r=\"-1\"/>",
            "<S t=\"18446744073709551615\" d=\"2\"/>",
        ] {
            #expect(throws: FormatError.self) { try ParsedDASHManifest(head + run + tail) }
        }
        #expect(
            (try? ParsedDASHManifest(head + "<S d=\"1\" r=\"999\"/>" + tail))?.periods[0].adaptationSets[0]
                .representations[0].segments.count == 1_000)
    }
}
