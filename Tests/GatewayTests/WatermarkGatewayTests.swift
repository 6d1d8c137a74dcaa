import ControlAPI
import Foundation
import HTTPServer
import HTTPTestSupport
import ProcessTestSupport
import Store
import Testing

@testable import Gateway

/// A/B watermarked segments through the gateway on a loopback socket: per-session playlists name each
/// session's variants, and nothing else of a watermarked rendition is served.
@Suite(.timeLimit(.minutes(30))) struct WatermarkGatewayTests {
    /// The `clip` fixture plus `marked`: a master, an unmarked audio playlist and a 70-segment video
    /// playlist in `video/` made A/B, served live.
    final class Live {
        let fixture: GatewayFixture
        let server: HTTPServer
        let segments: [ABSegment]
        var gateway: Gateway { fixture.gateway }
        static let segmentCount = 70

        init() throws {
            fixture = try GatewayFixture()
            let scratch = fixture.scratch
            var media = "#EXTM3U\n#EXT-X-VERSION:5\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n"
            media += "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"key.bin\",IV=0x000102030405060708090a0b0c0d0e0f\n"
            for index in 0..<Self.segmentCount {
                media += "#EXTINF:2.000000,\nseg\(index).ts\n"
                try scratch.write("imports/marked/video/seg\(index).ts", String(repeating: "G\(index)|", count: 200))
            }
            try scratch.write("imports/marked/video/media.m3u8", media + "#EXT-X-ENDLIST\n")
            try scratch.write(
                "imports/marked/audio.m3u8",
                "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\naudio0.aac\n#EXT-X-ENDLIST\n")
            try scratch.write("imports/marked/audio0.aac", "audio")
            try scratch.write(
                "imports/marked/master.m3u8",
                """
                #EXTM3U
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",DEFAULT=YES,URI="audio.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=800000,AUDIO="a"
                video/media.m3u8

                """)
            let directory = scratch.path + "/imports/marked"
            segments = try #require(
                try makeABWatermarked(directory, playlists: ["video/media.m3u8"])["video/media.m3u8"])
            _ = try fixture.gateway.importAsset(
                id: "marked", directory: directory,
                keys: [ImportedKey(kid: "aa112233445566778899aabbccddeeff", key: Array(1...16), uri: nil)],
                denyKeysWhileCapturing: false)
            server = try fixture.startLive()
        }

        deinit {
            server.stop(grace: 1)
            fixture.gateway.stop()
        }

        func get(_ target: String, method: String = "GET") throws -> RawResponse {
            try exchange(port: server.port, method, target)
        }

        /// The segment URIs of the video playlist as session `token` gets it.
        func segmentURIs(token: String) throws -> [String] {
            let playlist = try get("/v1/hls/marked/video/media.m3u8?token=\(token)")
            #expect(playlist.status == 200)
            return playlist.text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        }

        func bytes(_ path: String) throws -> [UInt8] {
            try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture.scratch.path + "/imports/marked/" + path)))
        }
    }

    @Test func twoSessionsGetTheVariantsTheirCodewordsSpell() throws {
        let live = try Live()
        let watermark = live.gateway.watermark
        var spelled: [String: UInt64] = [:]
        var candidates = (0..<200).map { "ses_\($0)" }
        for _ in 0..<2 {
            let (session, token) = try live.gateway.createSession(asset: "marked", ttl: nil)
            candidates.append(session.id)
            let uris = try live.segmentURIs(token: token)
            #expect(uris.count == Live.segmentCount)
            let codeword = watermark.codeword(session: session.id)
            var scores: [Int: Double] = [:]
            for (index, uri) in uris.enumerated() {
                let prefix = "/v1/wm/marked/\(session.id)/"
                #expect(uri.hasPrefix(prefix) && uri.hasSuffix("/video/seg\(index).ts"), "\(uri)")
                // The tag is opaque: neither the URI's name nor anything else says which variant it is.
                #expect(!uri.contains(".a.") && !uri.contains(".b."))
                let response = try live.get(uri)
                #expect(response.status == 200, "\(uri): \(response.text)")
                let (a, b) = (try live.bytes(live.segments[index].a), try live.bytes(live.segments[index].b))
                let isB = response.body == b
                #expect(isB || response.body == a)
                let position = watermark.position(asset: "marked", segment: index)
                #expect(isB == (codeword >> UInt64(position) & 1 == 1), "segment \(index)")
                #expect(
                    response.header("X-GuardPlay-Variant")
                        == "marked/\(isB ? live.segments[index].b : live.segments[index].a)")
                #expect(response.header("Cache-Control") == "public, max-age=31536000, immutable")
                scores[index] = isB ? -1 : 1
            }
            spelled[session.id] = codeword
            // What was served names this session, and no other, among 202 of the asset.
            let found = WatermarkDecoder(watermark: watermark).identify(
                scores: scores, asset: "marked", candidates: candidates)
            #expect(found.session == session.id && found.bitErrorRate == 0, "\(found)")
        }
        #expect(Set(spelled.values).count == 2)
        // The unmarked audio playlist and the master are rewritten as before, with no variant paths.
        let (_, token) = try live.gateway.createSession(asset: "marked", ttl: nil)
        #expect(try live.get("/v1/hls/marked/audio.m3u8?token=\(token)").text.contains("\naudio0.aac\n"))
        #expect(try live.get("/v1/hls/marked/audio0.aac").status == 200)
    }

    @Test func theOtherVariantAMadeUpTagAndTheFilesThemselvesAreRefused() throws {
        let live = try Live()
        let watermark = live.gateway.watermark
        let (first, firstToken) = try live.gateway.createSession(asset: "marked", ttl: nil)
        let (second, _) = try live.gateway.createSession(asset: "marked", ttl: nil)
        let uris = try live.segmentURIs(token: firstToken)
        var refused = 0
        func expectRefused(_ target: String, _ code: String, status: Int = 403) throws {
            let response = try live.get(target)
            #expect(response.status == status, "\(target): \(response.text)")
            #expect(response.problemCode == code, "\(target): \(response.text)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        for index in [0, 1, 64, 69] {
            let own = watermark.variant(session: first.id, asset: "marked", segment: index)
            let other = watermark.tag(
                session: first.id, rendition: "video/media.m3u8", segment: index, variant: own.other)
            #expect(
                uris[index]
                    == "/v1/wm/marked/\(first.id)/\(watermark.tag(session: first.id, rendition: "video/media.m3u8", segment: index, variant: own))/video/seg\(index).ts"
            )
            try expectRefused("/v1/wm/marked/\(first.id)/\(other)/video/seg\(index).ts", "watermark-variant-refused")
            // The first session's path with the second session's ID: that session's tag differs.
            try expectRefused(
                uris[index].replacingOccurrences(of: first.id, with: second.id), "watermark-variant-refused")
            // The tag of another segment.
            try expectRefused(
                uris[index].replacingOccurrences(of: "seg\(index).ts", with: "seg\(index == 0 ? 1 : 0).ts"),
                "watermark-variant-refused")
            refused += 3
        }
        try expectRefused("/v1/wm/marked/\(first.id)/AAAAAAAAAAAAAAAAAAAAAA/video/seg0.ts", "watermark-variant-refused")
        try expectRefused("/v1/wm/marked/ses_madeup/AAAAAAAAAAAAAAAAAAAAAA/video/seg0.ts", "watermark-variant-refused")
        try expectRefused("/v1/wm/clip/\(first.id)/AAAAAAAAAAAAAAAAAAAAAA/seg0.ts", "watermark-segment-unknown")
        // Neither variant file is served by its own name, to anyone.
        for name in ["video/seg3.a.ts", "video/seg3.b.ts"] {
            try expectRefused("/v1/hls/marked/\(name)", "watermark-variant-direct")
        }
        // The session's own path still works; once revoked, it does not.
        #expect(try live.get(uris[5]).status == 200)
        #expect(try live.get(uris[5], method: "HEAD").header("X-GuardPlay-Variant") != nil)
        try live.gateway.revokeSession(first.id)
        try expectRefused(uris[5], "watermark-variant-refused")

        let metrics = try live.get("/metrics").text
        #expect(metrics.contains("guardplay_watermark_segment_requests_total{outcome=\"granted\"} 2\n"), "\(metrics)")
        #expect(
            metrics.contains(
                "guardplay_watermark_segment_requests_total{outcome=\"watermark-variant-refused\"} \(refused + 3)\n"),
            "\(metrics)")
        #expect(
            metrics.contains("guardplay_watermark_segment_requests_total{outcome=\"watermark-variant-direct\"} 2\n"))
        // Refusals naming a live session of the asset are audited with it; the rest are counted.
        live.gateway.flushAudit()
        let audited = try live.fixture.store.recentAudit(limit: 100).filter { $0.action == "segment" }
        #expect(audited.filter { $0.sessionID == first.id && $0.reason == "watermark-variant" }.count == 9)
        #expect(audited.filter { $0.sessionID == second.id }.count == 4)
        #expect(audited.contains { $0.sessionID == first.id && $0.reason == "session-revoked" })
        #expect(audited.allSatisfy { $0.outcome == "refused" && $0.assetID == "marked" })
        let counts = try live.fixture.store.refusalCounts()
        #expect(counts.contains { $0.reason == "watermark-session-unknown" })
        #expect(counts.contains { $0.reason == "watermark-variant-direct" && $0.count == 2 })
    }

    @Test func theAssetSaysHowMuchViewingIdentifiesASessionAndUnmarkedAssetsAreUnchanged() throws {
        let live = try Live()
        let summary = try #require(live.gateway.asset("marked")?.watermark)
        #expect(summary == WatermarkSummary(codewordBits: 64, segmentSeconds: 2))
        #expect(summary.identifiesAfterSeconds == 128)
        #expect(live.gateway.asset("clip")?.watermark == nil)
        let (_, token) = try live.gateway.createSession(asset: "clip", ttl: nil)
        let media = try live.get("/v1/hls/clip/media.m3u8?token=\(token)").text
        #expect(media.contains("\nseg0.ts\n") && !media.contains("/v1/wm/"))
        #expect(try live.get("/v1/hls/clip/seg0.ts").status == 200)
    }

    @Test func anAssetWhoseVariantsAreIncompleteIsNotImported() throws {
        let fixture = try GatewayFixture()
        let directory = try writePackagedAsset(in: fixture.scratch, directory: "imports/broken", keyURI: "key.bin")
        let segments = try makeABWatermarked(directory, playlists: ["media.m3u8"])
        try FileManager.default.removeItem(atPath: directory + "/" + segments["media.m3u8"]![0].b)
        #expect {
            _ = try fixture.gateway.importAsset(
                id: "broken", directory: directory,
                keys: [ImportedKey(kid: "bb112233445566778899aabbccddeeff", key: Array(1...16), uri: nil)],
                denyKeysWhileCapturing: false)
        } throws: { ($0 as? GatewayError)?.code == "watermark-manifest-invalid" }
        try "{\"version\":2}".write(toFile: directory + "/watermark.json", atomically: true, encoding: .utf8)
        #expect(throws: GatewayError.self) {
            _ = try fixture.gateway.importAsset(
                id: "broken", directory: directory,
                keys: [ImportedKey(kid: "bb112233445566778899aabbccddeeff", key: Array(1...16), uri: nil)],
                denyKeysWhileCapturing: false)
        }
    }
}
