import FoundationEssentials
import Glibc
import SystemSupport

/// The proxies whose `X-Forwarded-For` is believed, as address ranges (`10.0.0.0/8`, `::1`,
/// `127.0.0.1`). A request from anyone else has its header ignored: its client is its peer.
public struct TrustedProxies: Sendable, Equatable {
    /// One range: the network's bytes and its prefix length.
    struct Range: Sendable, Equatable {
        let network: [UInt8]
        let prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == network.count else { return false }
            var bits = prefix
            for (have, want) in zip(address, network) where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                guard have & mask == want & mask else { return false }
                bits -= 8
            }
            return true
        }
    }

    let ranges: [Range]

    /// No trusted proxy: every request's client is its peer.
    public init() { ranges = [] }

    /// The ranges in `specifications` (an address, or an address with a `/prefix`), or an error
    /// naming the first one that is neither.
    public static func parse(_ specifications: [String]) -> Result<TrustedProxies, TrustedProxyError> {
        var ranges: [Range] = []
        for text in specifications {
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let network = addressBytes(String(parts[0])) else { return .failure(TrustedProxyError(text)) }
            var prefix = network.count * 8
            if parts.count == 2 {
                guard let given = Int(parts[1]), parts[1].allSatisfy(\.isNumber), (0...prefix).contains(given) else {
                    return .failure(TrustedProxyError(text))
                }
                prefix = given
            }
            ranges.append(Range(network: network, prefix: prefix))
        }
        return .success(TrustedProxies(ranges: ranges))
    }

    private init(ranges: [Range]) { self.ranges = ranges }

    /// True when `address` (numeric text) lies in a trusted range.
    public func trusts(_ address: String) -> Bool {
        guard !ranges.isEmpty, let bytes = Self.addressBytes(address) else { return false }
        return ranges.contains { $0.contains(bytes) }
    }

    /// The client of a request from `peer` carrying `forwardedFor` (every `X-Forwarded-For` value, in
    /// order). Only when the peer is trusted is the header read: from the right, each trusted hop
    /// passes the request on to the address before it, and the first untrusted address is the
    /// client. A hop that is not an address ends the walk at the trusted hop that reported it.
    public func client(peer: String, forwardedFor: @autoclosure () -> [String]) -> String {
        guard !ranges.isEmpty, trusts(peer) else { return peer }
        let hops = forwardedFor().flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces() }
        var client = peer
        for hop in hops.reversed() {
            guard Self.addressBytes(hop) != nil else { return client }
            client = hop
            if !trusts(hop) { return hop }
        }
        return client
    }

    /// The bytes of an IPv4 or IPv6 literal (`inet_pton`), or nil.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }
}

/// A trusted-proxy range that is not an address or `address/prefix`.
public struct TrustedProxyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text as given.
    public let text: String

    /// The error for `text`.
    public init(_ text: String) { self.text = text }

    public var description: String {
        "'\(text)' is not an IP address or CIDR range such as 10.0.0.0/8 or ::1"
    }
}
