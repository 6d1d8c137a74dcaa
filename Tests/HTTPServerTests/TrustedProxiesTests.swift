import HTTPServer
import Testing

@Suite struct TrustedProxiesTests {
    func proxies(_ ranges: [String]) throws -> TrustedProxies {
        try TrustedProxies.parse(ranges).get()
    }

    @Test func readsXForwardedForOnlyFromATrustedPeer() throws {
        let trusted = try proxies(["10.0.0.0/8", "192.168.1.7", "fd00::/8"])
        #expect(trusted.client(peer: "10.1.2.3", forwardedFor: ["203.0.113.9"]) == "203.0.113.9")
        #expect(trusted.client(peer: "192.168.1.7", forwardedFor: ["203.0.113.9"]) == "203.0.113.9")
        #expect(trusted.client(peer: "fd12::1", forwardedFor: ["2001:db8::5"]) == "2001:db8::5")
        // Anyone else's header is ignored, however it looks.
        #expect(trusted.client(peer: "192.168.1.8", forwardedFor: ["10.0.0.1"]) == "192.168.1.8")
        #expect(trusted.client(peer: "11.0.0.1", forwardedFor: ["203.0.113.9"]) == "11.0.0.1")
        #expect(TrustedProxies().client(peer: "10.1.2.3", forwardedFor: ["203.0.113.9"]) == "10.1.2.3")
    }

    @Test func takesTheRightMostUntrustedHop() throws {
        let trusted = try proxies(["10.0.0.0/8"])
        // A client can prepend anything; only what the trusted proxies appended counts.
        #expect(
            trusted.client(peer: "10.0.0.1", forwardedFor: ["1.1.1.1, 198.51.100.7", "10.0.0.2"]) == "198.51.100.7")
        // Every hop trusted: the first one is the client.
        #expect(trusted.client(peer: "10.0.0.1", forwardedFor: ["10.0.0.3, 10.0.0.2"]) == "10.0.0.3")
        // A hop that is not an address stops the walk at the trusted hop that reported it.
        #expect(trusted.client(peer: "10.0.0.1", forwardedFor: ["198.51.100.7, unknown, 10.0.0.2"]) == "10.0.0.2")
        #expect(trusted.client(peer: "10.0.0.1", forwardedFor: []) == "10.0.0.1")
    }

    @Test(arguments: ["nginx", "10.0.0.0/33", "10.0.0.0/", "::1/129", "10.0.0.0/-1", ""])
    func refusesRangesThatAreNotAddresses(_ text: String) {
        #expect(throws: TrustedProxyError(text)) { try TrustedProxies.parse([text]).get() }
    }
}
