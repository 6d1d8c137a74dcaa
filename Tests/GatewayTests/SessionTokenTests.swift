import Foundation
import Testing

@testable import Gateway

@Suite struct SessionTokenTests {
    let signer = SessionTokenSigner(key: Array(repeating: 1, count: 32))
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func acceptsItsOwnTokenUntilItExpires() {
        let token = signer.issue(session: "ses_1", asset: "clip", expiresAt: now + 60)
        #expect(
            signer.verify(token, now: now)
                == .success(SessionClaims(sessionID: "ses_1", assetID: "clip", expiresAt: now + 60)))
        #expect(signer.verify(token, now: now + 60) == .failure(.tokenExpired))
    }

    @Test(arguments: [
        ("", AccessRefusal.tokenMissing), ("v1.a.b", .tokenMalformed), ("v2.ses_1.clip.1800000060.x", .tokenMalformed),
        ("v1.ses 1.clip.1800000060.\(String(repeating: "A", count: 43))", .tokenMalformed),
        ("v1.ses_1.clip.-5.\(String(repeating: "A", count: 43))", .tokenMalformed),
    ])
    func refusesMalformedTokens(_ token: String, _ refusal: AccessRefusal) {
        #expect(signer.verify(token, now: now) == .failure(refusal))
    }

    @Test func refusesAnyChangeToASignedToken() {
        let token = signer.issue(session: "ses_1", asset: "clip", expiresAt: now + 60)
        let otherAsset = token.replacingOccurrences(of: ".clip.", with: ".song.")
        let longer = token.replacingOccurrences(of: ".1800000060.", with: ".1800009999.")
        var flipped = Array(token)
        flipped[flipped.count - 3] = flipped[flipped.count - 3] == "A" ? "B" : "A"
        for forged in [otherAsset, longer, String(flipped)] {
            #expect(signer.verify(forged, now: now) == .failure(.tokenTampered))
        }
        let otherKey = SessionTokenSigner(key: Array(repeating: 2, count: 32))
        #expect(otherKey.verify(token, now: now) == .failure(.tokenTampered))
    }
}

@Suite struct CaptureLeaseTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func startsUnknownAndFollowsReports() {
        var lease = CaptureLease(leaseDuration: 10, start: start)
        #expect(lease.state == .unknown)
        guard case .applied(let change?) = lease.report(capturing: false, seq: 1, observedAt: start, now: start + 1)
        else {
            Issue.record("first report did not change the state")
            return
        }
        #expect(change.state == .clear && change.previous == .unknown && change.reason == "reported")
        #expect(lease.leaseExpiresAt == start + 11)
        #expect(lease.report(capturing: false, seq: 2, observedAt: start, now: start + 2) == .applied(change: nil))
        guard case .applied(let capturing?) = lease.report(capturing: true, seq: 3, observedAt: start, now: start + 3)
        else {
            Issue.record("capture report did not change the state")
            return
        }
        #expect(capturing.state == .capturing && capturing.seq == 3)
    }

    @Test func ignoresOutOfOrderReports() {
        var lease = CaptureLease(leaseDuration: 10, start: start)
        _ = lease.report(capturing: true, seq: 5, observedAt: start, now: start)
        #expect(lease.report(capturing: false, seq: 4, observedAt: start, now: start + 1) == .outOfOrder(lastSeq: 5))
        #expect(lease.report(capturing: false, seq: 5, observedAt: start, now: start + 1) == .outOfOrder(lastSeq: 5))
        #expect(lease.state == .capturing)
        #expect(lease.leaseExpiresAt == start + 10)
    }

    @Test func turnsUnknownWhenTheLeaseLapses() {
        var lease = CaptureLease(leaseDuration: 10, start: start)
        _ = lease.report(capturing: false, seq: 1, observedAt: start, now: start)
        #expect(lease.expire(now: start + 9.9) == nil)
        let change = lease.expire(now: start + 10)
        #expect(change?.state == .unknown && change?.previous == .clear && change?.reason == "lease-lapsed")
        #expect(lease.leaseExpiresAt == nil)
        #expect(lease.expire(now: start + 20) == nil)
    }
}

@Suite struct PlaylistRewriterTests {
    let rewriter = PlaylistRewriter(
        keyPathPrefix: "/v1/keys/", kidsByURI: ["skd://special": "k2"], kids: ["k1", "k2"])

    @Test func pointsKeysAtTheGatewayAndCarriesTheTokenToPlaylistsOnly() {
        let master = """
            #EXTM3U
            #EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="k1.key"
            #EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="a,b"
            video/media.m3u8
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="audio.m3u8?x=1"
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI="iframes.m3u8"
            """
        #expect(
            rewriter.rewrite(master, token: "T")
                == """
                #EXTM3U
                #EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="/v1/keys/k1?token=T"
                #EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="a,b"
                video/media.m3u8?token=T
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="audio.m3u8?x=1&token=T"
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI="iframes.m3u8?token=T"
                """)
        let media =
            "#EXTM3U\r\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://special\",IV=0x01\r\n#EXTINF:6,\r\nseg0.ts\r\n"
            + "#EXT-X-KEY:METHOD=NONE\r\n#EXT-X-MAP:URI=\"init.mp4\"\r\nseg1.ts\r\n"
        #expect(
            rewriter.rewrite(media, token: "T")
                == "#EXTM3U\r\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"/v1/keys/k2?token=T\",IV=0x01\r\n#EXTINF:6,\r\nseg0.ts\r\n"
                + "#EXT-X-KEY:METHOD=NONE\r\n#EXT-X-MAP:URI=\"init.mp4\"\r\nseg1.ts\r\n")
    }

    @Test func findsTheKeyForAURI() {
        #expect(rewriter.kid(forURI: "skd://special") == "k2")
        #expect(rewriter.kid(forURI: "https://x/keys/k1.bin") == "k1")
        #expect(rewriter.kid(forURI: "skd://k2") == "k2")
        #expect(rewriter.kid(forURI: "key.bin") == nil)
        let single = PlaylistRewriter(keyPathPrefix: "/v1/keys/", kidsByURI: [:], kids: ["only"])
        #expect(single.kid(forURI: "key.bin") == "only")
    }

    @Test func rewritesOnlyTheAttributeNamedURI() {
        // A name that merely ends in URI, a repeated URI, a quoted comma and whitespace before the quote.
        let media = """
            #EXT-X-MEDIA:TYPE=AUDIO,X-ALT-URI="alt.m3u8",NAME="a,URI=b",URI="audio.m3u8"
            #EXT-X-KEY:METHOD=SAMPLE-AES,X-URI="skd://k1",URI="skd://special",URI= "skd://k1"
            #EXT-X-KEY:METHOD = NONE,URI="k1.key"
            """
        #expect(
            rewriter.rewrite(media, token: "T")
                == """
                #EXT-X-MEDIA:TYPE=AUDIO,X-ALT-URI="alt.m3u8",NAME="a,URI=b",URI="audio.m3u8?token=T"
                #EXT-X-KEY:METHOD=SAMPLE-AES,X-URI="skd://k1",URI="/v1/keys/k2?token=T",URI= "/v1/keys/k1?token=T"
                #EXT-X-KEY:METHOD = NONE,URI="k1.key"
                """)
    }
}
