import FoundationEssentials
import Glibc
import Synchronization

/// A token bucket per client address for refused requests: each refusal takes a token, tokens come
/// back at `rate` a second up to `burst`, and an address with none left is answered 429 until one
/// has come back. Grants never take a token, so a valid session is never throttled, even behind the
/// same address as someone guessing.
///
/// The table holds at most `capacity` addresses: when it is full, addresses whose buckets have
/// refilled (they are no different from new ones) are forgotten, then, if that leaves less than a
/// tenth of the table free, those refused longest ago.
final class RefusalLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let burst: Double
    let rate: Double
    let capacity: Int
    private let buckets = Mutex([String: Bucket]())

    init(burst: Double, rate: Double, capacity: Int) {
        self.burst = max(1, burst)
        self.rate = max(0.001, rate)
        self.capacity = max(1, capacity)
    }

    /// Seconds until an empty bucket has a token again: the `Retry-After` of a 429.
    var retryAfter: Int { Int((1 / rate).rounded(.up)) }

    /// Takes a token for a refusal to `address` at `now` (seconds); false when there is none.
    func allow(_ address: String, now: Double) -> Bool {
        buckets.withLock { buckets in
            if buckets[address] == nil && buckets.count >= capacity { evict(&buckets, now: now) }
            var bucket = buckets[address] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[address] = bucket
            return allowed
        }
    }

    /// The address a refusal is limited and counted under: an IPv4 address as it is, an IPv6 address
    /// as its /64 (one subscriber's network, whose every address is the same client here), so changing
    /// addresses inside one's network neither escapes the limit nor adds rows.
    static func client(_ address: String) -> String {
        var bytes = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        withUnsafeMutableBytes(of: &bytes) { raw in
            for index in 8..<16 { raw[index] = 0 }
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(AF_INET6, &bytes, &text, socklen_t(text.count)) != nil else { return address }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } + "/64"
    }

    /// Addresses held now.
    var count: Int { buckets.withLock { $0.count } }

    /// Makes room for at least a tenth of `capacity` at once, so a stream of new addresses (a
    /// distributed flood) pays for this pass over the table once per tenth, not on every refusal.
    private func evict(_ buckets: inout [String: Bucket], now: Double) {
        buckets = buckets.filter { $0.value.tokens + (now - $0.value.updated) * rate < burst }
        let room = max(1, capacity / 10)
        let excess = buckets.count - (capacity - room)
        guard excess > 0 else { return }
        for (address, _) in buckets.sorted(by: { $0.value.updated < $1.value.updated }).prefix(excess) {
            buckets[address] = nil
        }
    }
}
