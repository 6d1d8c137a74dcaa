import Testing

@testable import Packager

@Suite struct LanguageTests {
    @Test func mapsISO6392ToRFC5646() {
        #expect(Languages.tag("eng") == "en" && Languages.tag("fre") == "fr" && Languages.tag("fra") == "fr")
        #expect(Languages.tag("und") == nil && Languages.tag(nil) == nil && Languages.tag("x\"y") == nil)
        #expect(Languages.tag("tlh") == "tlh")
        #expect(Languages.name("deu") == "German")
    }
}
